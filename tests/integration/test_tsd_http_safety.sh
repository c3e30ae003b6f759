#!/usr/bin/env bash
# test_tsd_http_safety.sh - HTTP data safety (see http_safety.py): slow readers of large query
# answers hold no query worker and are closed by tsd.http.response.write_timeout, or (write
# timeout off, a small tsd.http.query.answer_buffer_bytes) have their answers cut when the pool
# is full and they stall; RFC 9112 framing errors get 400/501 and the connection closed;
# pipelined puts before a half-close are all answered and stored.
source "$(dirname "$0")/lib.sh"
py="$(dirname "$0")/http_safety.py"

# two query workers, as in the issue; a 2 s write timeout; chunked request bodies on (the
# framing cases need them honoured)
tsd_start --tsd.query.threads=2 --tsd.http.response.write_timeout=2 --tsd.http.request.enable_chunked=true
python3 "$py" "$TSD_PORT" load framing halfclose slow
tsd_stop
check_eq "clean shutdown (write timeout)" 0 $?

# the same data, no write timeout, a 1 MiB answer pool: the answers are cut once the pool is
# full and their clients stall, which releases the workers
tsd_start --tsd.query.threads=2 --tsd.http.response.write_timeout=0 \
  --tsd.http.query.answer_buffer_bytes=1048576
python3 "$py" "$TSD_PORT" slowcut
grep -q "answer to .* cut" "$TSD_LOG" && ok "the cut answers are logged" || not_ok "the cut answers are logged"
tsd_stop
check_eq "clean shutdown (answer pool)" 0 $?
it_done
