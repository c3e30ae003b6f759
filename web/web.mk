# web/web.mk - vendors the dashboard's charting library (uPlot) into web/vendor/.
#
# The version is pinned exactly in web/npm/package.json and web/npm/package-lock.json (with its
# sha512 integrity). `npm ci` installs it into build/web-npm/ (outside the served tree, so no
# node_modules is ever served), then uPlot's dist files and its LICENSE are copied to
# web/vendor/ (gitignored; the license as LICENSE.uPlot.txt, served as text and linked from
# the page's footer). Runs again only when the lock file changes. Needs node and npm (both in
# deps/build.txt) and the npm registry, as every build of ctsdb does; a build without them
# fails here with a clear message rather than serving a page without its chart.

# This fragment is included before the Makefile's `all` rule: keep `all` the default goal.
.DEFAULT_GOAL := all

WEB_NPM_DIR   := build/web-npm
WEB_VENDOR    := web/vendor
WEB_VENDORED  := $(WEB_VENDOR)/uPlot.iife.min.js $(WEB_VENDOR)/uPlot.min.css $(WEB_VENDOR)/LICENSE.uPlot.txt

$(WEB_VENDOR)/.stamp: web/npm/package.json web/npm/package-lock.json
	@command -v npm >/dev/null || { echo "web: npm is needed to vendor uPlot (apt-get install npm)" >&2; exit 1; }
	@mkdir -p $(WEB_NPM_DIR) $(WEB_VENDOR)
	$(Q)cp web/npm/package.json web/npm/package-lock.json $(WEB_NPM_DIR)/
	$(call quiet,NPM,$(WEB_VENDOR)/uPlot)cd $(WEB_NPM_DIR) && \
	  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	$(Q)cp $(WEB_NPM_DIR)/node_modules/uplot/dist/uPlot.iife.min.js $(WEB_VENDOR)/uPlot.iife.min.js
	$(Q)cp $(WEB_NPM_DIR)/node_modules/uplot/dist/uPlot.min.css $(WEB_VENDOR)/uPlot.min.css
	$(Q)cp $(WEB_NPM_DIR)/node_modules/uplot/LICENSE $(WEB_VENDOR)/LICENSE.uPlot.txt
	@touch $@

$(WEB_VENDORED): $(WEB_VENDOR)/.stamp

# A vendored file went missing (the stamp alone is left): vendor again.
ifneq ($(words $(wildcard $(WEB_VENDORED))),3)
.PHONY: $(WEB_VENDOR)/.stamp
endif

.PHONY: web-vendor
web-vendor: $(WEB_VENDOR)/.stamp

EXTRA_ALL += $(WEB_VENDOR)/.stamp
