#!/usr/bin/env python3
"""model_ttl.py SEED OPS OUTDIR - like model.py, with the version limit, TTL and MIN_VERSIONS in
play: writes OUTDIR/model.rb (in phases separated by `#@ now MS` lines, each run by a new shell
process at that clock) and OUTDIR/model.out, the output docs/shell.md, "Output", requires.

The model keeps every physical cell with where it is (memstore or files) and reads with the
exact algorithm of docs/storage-contract.md, "What a read returns" (early expiry, markers, masked
puts not counted, time range, column selection, duplicates, version counting with MIN_VERSIONS
and TTL); a flush and a major compaction rewrite their inputs with the rules of "Flush and
compaction retention" at the current clock. Family f: VERSIONS 2; family g: VERSIONS 3, TTL
10 s, MIN_VERSIONS 1; family h: VERSIONS 1, TTL 5 s. To stay
deterministic the script never lets a store reach 3 files (an automatic compaction of every file
is a major one), splits only right after a flush and a major compaction, and ends every phase
with a flush and a major compaction (so flushing on close changes nothing)."""
import random
import sys

seed, nops, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rnd = random.Random(seed)
now = 1700000000000
FAMS = {"f": (2, 0, None), "g": (3, 1, 10), "h": (1, 0, 5)}  # versions, min_versions, ttl_s
ROWS = ["a", "b", "c", "d\x00", "e", "f"]
QUALS = ["", "a", "b"]
TYPE_CODE = {"put": 4, "Delete": 8, "DeleteFamilyVersion": 10, "DeleteColumn": 12,
             "DeleteFamily": 14}
splits = {"c"}
cells = []
seq = 0
files = 0


def bkey(s):
    return s.encode("latin-1")


def binform(s):
    return "".join(ch if 0x20 <= ord(ch) <= 0x7E and ch != "\\" else "\\x%02X" % ord(ch) for ch in s)


def shell_str(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "\\\"#":
            out.append("\\" + ch)
        elif 0x20 <= o <= 0x7E:
            out.append(ch)
        else:
            out.append("\\x%02x" % o)
    return '"' + "".join(out) + '"'


def order(cs):
    return sorted(cs, key=lambda c: (bkey(c["row"]), bkey(c["fam"]), bkey(c["qual"]), -c["ts"],
                                     -TYPE_CODE[c["type"]], -c["seq"]))


def oldest(fam):
    ttl = FAMS[fam][2]
    return now - ttl * 1000 if ttl else -(1 << 62)


def read_rf(cs, fam, tmin, tmax, req, selected):
    """The rules of "What a read returns" over the cells of one row and family (any order);
    returns the cells returned."""
    versions, minv, _ = FAMS[fam]
    old = oldest(fam)
    maxv = min(req, versions)
    out = []
    F, FV = None, set()
    col = object()
    for c in order(cs):
        if c["qual"] != col:
            col, C, D, n, skip, prev = c["qual"], None, set(), 0, False, None
        ts = c["ts"]
        if minv == 0 and ts < old:  # 1
            continue
        if c["type"] != "put":  # 2
            if ts >= tmin:
                t = c["type"]
                if t == "DeleteFamily":
                    F = ts if F is None else max(F, ts)
                elif t == "DeleteFamilyVersion":
                    FV.add(ts)
                elif t == "DeleteColumn":
                    C = ts if C is None else max(C, ts)
                else:
                    D.add(ts)
            continue
        if skip:
            continue
        if (F is not None and ts <= F) or ts in FV or (C is not None and ts <= C) or ts in D:
            continue  # 3
        if ts >= tmax:  # 4
            continue
        if ts < tmin:
            skip = True
            continue
        if not selected(c["qual"]):  # 5
            continue
        if prev == ts:  # 6
            continue
        prev = ts
        n += 1  # 7
        if n > maxv:
            skip = True
        elif n <= minv or ts >= old:
            out.append(c)
        else:
            skip = True
    return out


def rewrite(inputs, major):
    """The rules of "Flush and compaction retention" over a set of cells (one flush snapshot or
    all files); returns what survives."""
    groups = {}
    for c in inputs:
        groups.setdefault((c["row"], c["fam"]), []).append(c)
    keep = []
    for (row, fam), cs in groups.items():
        versions, minv, _ = FAMS[fam]
        old = oldest(fam)
        live = [c for c in cs if not (minv == 0 and c["ts"] < old)]
        markers = [c for c in live if c["type"] != "put"]

        def masked(p):
            for m in markers:
                t = m["type"]
                if t == "DeleteFamily" and p["ts"] <= m["ts"]:
                    return True
                if t == "DeleteFamilyVersion" and p["ts"] == m["ts"]:
                    return True
                if t == "DeleteColumn" and m["qual"] == p["qual"] and p["ts"] <= m["ts"]:
                    return True
                if t == "Delete" and m["qual"] == p["qual"] and p["ts"] == m["ts"]:
                    return True
            return False
        puts = [c for c in order(live) if c["type"] == "put" and not masked(c)]
        col, n, prev, skip = object(), 0, None, False
        for c in puts:
            if c["qual"] != col:
                col, n, prev, skip = c["qual"], 0, None, False
            if skip or prev == c["ts"]:
                continue
            prev = c["ts"]
            n += 1
            if n > versions:
                skip = True
            elif n <= minv or c["ts"] >= old:
                keep.append(c)
            else:
                skip = True
        if not major:
            keep += markers
    return keep


def flush():
    global files
    mem = [c for c in cells if c["loc"] == "mem"]
    if not mem:
        return
    out = rewrite(mem, False)
    for c in out:
        c["loc"] = "file"
    cells[:] = [c for c in cells if c["loc"] == "file"] + out
    files += 1


def major():
    global files
    fl = [c for c in cells if c["loc"] == "file"]
    out = rewrite(fl, True)
    cells[:] = [c for c in cells if c["loc"] == "mem"] + out
    files = 1 if out else 0


def read(rows_ok, cols, tmin, tmax, req):
    res = {}
    groups = {}
    for c in cells:
        if rows_ok(c["row"]):
            groups.setdefault((c["row"], c["fam"]), []).append(c)
    for (row, fam), cs in groups.items():
        if cols is None:
            sel = lambda q: True
        else:
            fc = [q for f, q in cols if f == fam]
            if not fc:
                continue
            sel = (lambda q: True) if None in fc else (lambda q, fc=fc: q in fc)
        got = read_rf(cs, fam, tmin, tmax, req, sel)
        if got:
            res.setdefault(row, []).extend(got)
    for r in res:
        res[r] = order(res[r])
    return res


rb = ["# generated by tests/integration/shell/model_ttl.py %d %d" % (seed, nops),
      "create 'm', {NAME => 'f', VERSIONS => 2}, {NAME => 'g', VERSIONS => 3, TTL => 10, "
      "MIN_VERSIONS => 1, DATA_BLOCK_ENCODING => 'DIFF'}, {NAME => 'h', TTL => 5}, SPLITS => ['c']"]
exp = ["Created table m"]


def rand_ts():
    return now + rnd.randrange(-25, 4) * 1000 + rnd.choice([0, 0, 0, 1, 999])


def rand_cols():
    k = rnd.randrange(3)
    if k == 0:
        return None, ""
    cols, texts = [], []
    for _ in range(k):
        f = rnd.choice(list(FAMS))
        if rnd.random() < 0.4:
            cols.append((f, None))
            texts.append(shell_str(f))
        else:
            q = rnd.choice(QUALS)
            cols.append((f, q))
            texts.append(shell_str(f + ":" + q))
    return cols, "COLUMNS => [" + ", ".join(texts) + "]"


def add(row, fam, qual, ts, typ, val=None):
    cells.append(dict(row=row, fam=fam, qual=qual, ts=ts, type=typ, seq=seq, value=val, loc="mem"))


for i in range(nops):
    x = rnd.random()
    row, fam, qual = rnd.choice(ROWS), rnd.choice(list(FAMS)), rnd.choice(QUALS)
    ts = rand_ts()
    seq += 1
    if x < 0.40:
        val = "v%d" % seq
        if rnd.random() < 0.2:
            rb.append("put 'm', %s, %s, '%s'" % (shell_str(row), shell_str(fam + ":" + qual), val))
            ts = now
        else:
            rb.append("put 'm', %s, %s, '%s', %d" % (shell_str(row), shell_str(fam + ":" + qual), val, ts))
        add(row, fam, qual, ts, "put", val)
    elif x < 0.45:
        rb.append("delete 'm', %s, %s, %d" % (shell_str(row), shell_str(fam + ":" + qual), ts))
        add(row, fam, qual, ts, "Delete")
    elif x < 0.49:
        rb.append("delete 'm', %s, %s" % (shell_str(row), shell_str(fam + ":" + qual)))
        got = read(lambda r: r == row, [(fam, qual)], 0, 1 << 62, 1).get(row, [])
        add(row, fam, qual, got[0]["ts"] if got else now, "Delete")
    elif x < 0.51:
        rb.append("delete 'm', %s, %s, %d" % (shell_str(row), shell_str(fam), ts))
        add(row, fam, "", ts, "DeleteFamilyVersion")
    elif x < 0.54:
        rb.append("deleteall 'm', %s, %s, %d" % (shell_str(row), shell_str(fam + ":" + qual), ts))
        add(row, fam, qual, ts, "DeleteColumn")
    elif x < 0.56:
        rb.append("deleteall 'm', %s, %s" % (shell_str(row), shell_str(fam)))
        add(row, fam, "", now, "DeleteFamily")
    elif x < 0.57:
        rb.append("deleteall 'm', %s, '', %d" % (shell_str(row), ts))
        for f in FAMS:
            add(row, f, "", ts, "DeleteFamily")
    elif x < 0.61:
        if files < 2:
            rb.append("flush 'm'")
            flush()
    elif x < 0.63:
        rb.append("major_compact 'm'")
        major()
    elif x < 0.64:
        k = rnd.choice(["b", "b0", "d", "e", "e0"])
        if k not in splits:
            splits.add(k)
            rb += ["flush 'm'", "major_compact 'm'", "split 'm', '%s'" % k]
            flush()
            major()
    elif x < 0.67:
        # the clock moves on: end the phase with a flush and a major compaction
        rb += ["flush 'm'", "major_compact 'm'"]
        flush()
        major()
        now += rnd.randrange(1, 9) * 1000 + rnd.choice([0, 1, 999])
        rb.append("#@ now %d" % now)
    elif x < 0.82:
        cols, ctext = rand_cols()
        opts, tmin, tmax, req = [], 0, 1 << 62, 1
        if ctext:
            opts.append(ctext)
        if rnd.random() < 0.6:
            req = rnd.randrange(1, 5)
            opts.append("VERSIONS => %d" % req)
        if rnd.random() < 0.3:
            tmin = now + rnd.randrange(-30, 3) * 1000
            tmax = tmin + rnd.randrange(0, 20) * 1000
            opts.append("TIMERANGE => [%d, %d]" % (tmin, tmax))
        rb.append("get 'm', %s%s" % (shell_str(row), ", {" + ", ".join(opts) + "}" if opts else ""))
        res = read(lambda r: r == row, cols, tmin, tmax, req)
        exp.append("COLUMN  CELL")
        for c in res.get(row, []):
            exp.append(" %s:%s timestamp=%d, value=%s" % (binform(c["fam"]), binform(c["qual"]), c["ts"], c["value"]))
        exp.append("%d row(s)" % (1 if row in res else 0))
    else:
        cols, ctext = rand_cols()
        opts, tmin, tmax, req = [], 0, 1 << 62, 1
        if ctext:
            opts.append(ctext)
        rev = rnd.random() < 0.5
        if rev:
            opts.append("REVERSED => true")
        if rnd.random() < 0.6:
            req = rnd.randrange(1, 5)
            opts.append("VERSIONS => %d" % req)
        if rnd.random() < 0.25:
            tmin = now + rnd.randrange(-30, 3) * 1000
            tmax = tmin + rnd.randrange(0, 20) * 1000
            opts.append("TIMERANGE => [%d, %d]" % (tmin, tmax))
        rb.append("scan 'm'%s" % (", {" + ", ".join(opts) + "}" if opts else ""))
        res = read(lambda r: True, cols, tmin, tmax, req)
        exp.append("ROW  COLUMN+CELL")
        for r in sorted(res, key=bkey, reverse=rev):
            for c in res[r]:
                exp.append(" %s column=%s:%s, timestamp=%d, value=%s" % (
                    binform(r), binform(c["fam"]), binform(c["qual"]), c["ts"], c["value"]))
        exp.append("%d row(s)" % len(res))
rb.append("count 'm'")
exp.append("%d row(s)" % len(read(lambda r: True, None, 0, 1 << 62, 1)))
open(outdir + "/model.rb", "w").write("\n".join(rb) + "\n")
open(outdir + "/model.out", "w").write("\n".join(exp) + "\n")
