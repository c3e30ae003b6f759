#!/usr/bin/env python3
"""deps_check.py - do the deps lists name everything `make run`, `make test` and `make lint` use?

Reads the files each of those entry points runs, collects what they need from the system:
  * commands: the command words of the Makefile's recipes and $(shell ...) calls, and of the
    shell scripts (heredoc bodies, quoted text and comments left out; functions the scripts
    define, bash builtins and keywords skipped; `check DESC CMD`, `timeout N CMD`, `nice CMD`,
    `env CMD`, `exec CMD`, `command -v CMD` and `CC=clang` see through to CMD), and absolute
    /usr paths the scripts name (a browser, an emulator);
  * libraries: the -lNAME flags of the link lines (the development package owns libNAME.so);
  * headers: the <system headers> the C sources include, located by the compiler;
  * Python modules: what the test helpers (tests/integration/*.py) import;
then finds each one's Debian package (`dpkg -S` on the path) and checks that the package is
named by one of the lists that entry point installs (tools/deps.sh), or is pulled in by one of
them (their Depends, recursively), or is always there (Essential or Priority required, and
their Depends). Prints one "ok - " / "not ok - " line per entry point and one "not ok - " line
per thing whose package no list covers; exit status 1 if any.

Needs dpkg (Debian) and the things themselves installed here: something not installed cannot
be mapped to a package and is reported as such. Not checked: `make bench` (deps/bench.txt),
sanitizer runtimes, npm packages (pinned by their lock files, fetched by npm).

Usage: deps_check.py [--deps DIR] [--root DIR] [--list]   (--list: each thing and its package)   (DIR defaults: <root>/deps, the repository)
"""
import glob
import os
import re
import shutil
import subprocess
import sys

# Entry point -> (the lists it installs, the files it runs, the files whose C it compiles).
# `make run` reaches only some of the Makefile's rules: the others' recipes are left out.
RUN_SKIP = ["test", "unit", "integration", "bench", "stress", "tsan", "lint", "deps:", "deps-lint",
            "$(BUILD)/tests/", "fuzz", "clean", "$(TSAN_TESTS)"]
SCOPES = [
    ("make run", ["build.txt"], ["Makefile", "web/web.mk", "tools/deps.sh"],
     ["storage/*.c", "storage/engine/*.c", "schema/*.c", "query/*.c", "tsd/*.c", "tools/*.c",
      "storage/*.h", "storage/engine/*.h", "schema/*.h", "query/*.h", "tsd/*.h", "tools/*.h"]),
    ("make test", ["build.txt", "test.txt", "test-extra.txt"],
     ["Makefile", "web/web.mk", "tools/deps.sh", "storage/bigtable/bigtable.mk",
      "tests/fuzz/fuzz.mk", "tests/run_all.sh", "tests/run_unit.sh", "tests/fuzz/run.sh",
      "tests/integration/*.sh", "tests/integration/*.py"],
     ["storage/bigtable/*.c", "storage/bigtable/*.h", "tests/unit/*/*.c", "tests/unit/*/*/*.c",
      "tests/lib/*.c", "tests/lib/*.h", "tests/fuzz/*.c"]),
    ("make lint", ["lint.txt"], ["tools/lint.sh"], []),
]

# Not a package's command: builtins, keywords, and words the extraction sees as commands.
BUILTINS = set("""
    . : [ [[ ]] alias bg bind break builtin caller case cd command compgen complete continue
    declare dirs disown do done echo elif else enable esac eval exec exit export false fc fg fi
    for function getopts hash help history if in jobs kill let local logout mapfile popd printf
    pushd pwd read readarray readonly return select set shift shopt source suspend test then
    time times trap true type typeset ulimit umask unalias unset until wait while coproc
""".split())
# Prefix words: the command is the word after them (and after the arguments given here).
PREFIX = {"exec": 0, "nice": 0, "env": 0, "time": 0, "then": 0, "do": 0, "else": 0, "if": 0,
          "elif": 0, "while": 0, "until": 0, "!": 0, "timeout": 1, "check": 1}
# sudo is how tools/deps.sh installs the lists: it cannot install itself, so it is not listed.
BOOTSTRAP = {"sudo"}
# Where Debian's packages put commands (a python3 from pyenv or /usr/local is no package's).
DEBIAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_quotes(s):
    """The shell text with quoted literals replaced by Q; $(...) inside double quotes kept."""
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            out.append(" _q_ ")
            i += 2
        elif c == "'":
            j = s.find("'", i + 1)
            j = n if j < 0 else j
            out.append(" _q_ ")
            i = j + 1
        elif c == '"':
            i += 1
            out.append(" _q_ ")
            while i < n and s[i] != '"':
                if s[i] == "\\":
                    i += 2
                    continue
                if s.startswith("$(", i) and not s.startswith("$((", i):
                    depth, j = 0, i + 1
                    while j < n:
                        if s[j] in "'\"":  # a quoted ( or ) inside does not count
                            k = s.find(s[j], j + 1)
                            j = n if k < 0 else k + 1
                            continue
                        if s[j] == "(":
                            depth += 1
                        elif s[j] == ")":
                            depth -= 1
                            if depth == 0:
                                break
                        j += 1
                    out.append(" $(" + strip_quotes(s[i + 2:j]) + ") ")
                    i = j + 1
                    continue
                i += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_comment(line):
    """The line without its comment: a # that starts a word outside quotes (a quoted
    " #error" is text, not a comment)."""
    quote, i = None, 0
    while i < len(line):
        c = line[i]
        if quote == '"' and c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
        i += 1
    return line


def shell_text(text):
    """Shell source without heredoc bodies and comments."""
    lines, out, delim = text.split("\n"), [], None
    for line in lines:
        if delim is not None:
            if line.strip() == delim:
                delim = None
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m and "<<<" not in line:
            delim = m.group(1)
            line = line[:m.start()]
        out.append(strip_comment(line))
    return "\n".join(out)


def make_text(text, skip):
    """The shell of a makefile: recipe lines and $(shell ...) calls, make syntax reduced; the
    recipes of rules whose target starts with a word of `skip` are left out. Also returns the
    -lNAME libraries its variables and kept recipes link."""
    text = re.sub(r"\\\n", " ", text)
    parts, libs, keep = [], set(), True
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        if line.startswith("\t"):
            if keep:
                parts.append(line[1:])
                libs |= set(re.findall(r"(?<![\w-])-l([A-Za-z][\w+.-]*)", line))
            continue
        m = re.match(r"^([^=#:]+?)\s*::?(?!=)", line)
        if m:
            keep = not any(t.startswith(tuple(skip)) for t in m.group(1).split())
        elif re.match(r"^\s*[\w.]+\s*[:+?]?=", line):
            libs |= set(re.findall(r"(?<![\w-])-l([A-Za-z][\w+.-]*)", line))
        for m in re.finditer(r"\$\(shell (.*)\)", line):
            parts.append(m.group(1))
    s = "\n".join(parts)
    s = re.sub(r"\$\(call quiet,[^)]*\)", "", s)
    s = s.replace("$(Q)", "").replace("$(CC)", "cc").replace("$(MAKE)", "make")
    s = s.replace("$$", "$")
    s = re.sub(r"\$\([A-Za-z_][A-Za-z0-9_]*\)", "X", s)
    for _ in range(3):  # make's functions ($(dir $@), $(filter ...)), nested ones too
        s = re.sub(r"\$\([a-z-]+ [^()]*\)", "X", s)
    s = re.sub(r"^@", "", s, flags=re.M)
    return s, libs


def commands_in(shell):
    """The command words of shell text (already without heredocs and comments)."""
    found = set()
    for m in re.finditer(r"\bCC=([A-Za-z][\w.+-]*)", shell):
        found.add(m.group(1))
    for m in re.finditer(r"command -v ([A-Za-z][\w.+-]*)", shell):
        found.add(m.group(1))
    for m in re.finditer(r"(?<![\w/.])(/usr/(?:s?bin|lib)/[\w./+-]+)", shell):
        found.add(m.group(1))
    s = strip_quotes(shell)
    s = re.sub(r"\$\(\((.*?)\)\)", " ", s)  # arithmetic
    s = re.sub(r"\$\{[^}]*\}", "V", s)
    # Command substitutions and subshells, innermost first, become commands of their own and
    # a word (_s_) where they stood, so `git -C "$(dirname x)" rev-parse` stays one command.
    inner = []
    while True:
        t = re.sub(r"\$?\(([^()]*)\)", lambda m: inner.append(m.group(1)) or " _s_ ", s)
        if t == s:
            break
        s = t
    s = "\n".join([s] + inner)
    for seg in re.split(r"\$\(|;;|;|&&|\|\||\||&|`|\(|\)|\{|\}|\n", s):
        words = seg.split()
        i = 0
        while i < len(words):
            w = words[i]
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w) or w.startswith(("<", ">", "2>")):
                i += 1
            elif w in PREFIX:
                i += 1 + PREFIX[w]
                while w == "env" and i < len(words) and "=" in words[i]:
                    i += 1
            elif w in ("-u", "--") and i > 0 and words[i - 1] == "env":
                i += 1
            else:
                break
        if i < len(words):
            w = words[i]
            if re.match(r"^[A-Za-z][\w.+-]*$", w) or re.match(r"^/usr/(s?bin|lib)/", w):
                found.add(w)
    return found


def defined_functions(text):
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w]*)\s*\(\)\s*\{?", text, re.M))


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout


OWNERS = None  # path -> package, from dpkg's file lists (one read instead of a dpkg -S each)


def owners():
    global OWNERS
    if OWNERS is None:
        OWNERS = {}
        for lst in glob.glob("/var/lib/dpkg/info/*.list"):
            pkg = os.path.basename(lst)[:-5].split(":")[0]
            for line in read(lst).splitlines():
                OWNERS.setdefault(line, pkg)
    return OWNERS


def owner(path):
    """The package that owns path (trying the /usr-merged spelling too), or None."""
    cands = [path]
    for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"), ("/usr/lib/", "/lib/")):
        if path.startswith(a):
            cands.append(b + path[len(a):])
        elif path.startswith(b):
            cands.append(a + path[len(b):])
    for c in cands:
        if c in owners():
            return owners()[c]
    return None


def resolve_command(name):
    """A command or path -> (its package or None, why not)."""
    if name.startswith("/"):
        if not os.path.exists(name):
            return None, "%s is not installed here" % name
        return owner(os.path.realpath(name)) or owner(name), "no package owns %s" % name
    p = shutil.which(name, path=DEBIAN_PATH)
    if not p:
        return None, "command %s is not installed here from a package (in %s)" % (name, DEBIAN_PATH)
    return owner(os.path.realpath(p)) or owner(p), "no package owns %s" % p


def resolve_lib(name):
    rc, out = run(["cc", "-print-file-name=lib%s.so" % name])
    p = os.path.normpath(out.strip())
    if not p.startswith("/"):
        rc, out = run(["cc", "-print-file-name=lib%s.a" % name])
        p = os.path.normpath(out.strip())
    if not p.startswith("/"):
        return None, "library -l%s is not installed here" % name
    return owner(p), "no package owns %s" % p


PRELUDE = "#define PCRE2_CODE_UNIT_WIDTH 8\n#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n"


def resolve_header(h, root):
    rc, out = run(["cc", "-D_GNU_SOURCE", "-I" + root, "-M", "-x", "c", "-"],
                  PRELUDE + "#include <%s>\n" % h)
    if rc != 0:
        return None, "header <%s> is not installed here" % h
    for dep in out.replace("\\\n", " ").split():
        if dep.endswith("/" + h):
            p = os.path.normpath(dep)
            return owner(p), "no package owns %s" % p
    return None, "header <%s> not located" % h


def resolve_module(mod):
    rc, out = run(["/usr/bin/python3", "-c", "import %s, sys; print(getattr(%s, '__file__', '') or '')"
                   % (mod, mod)])
    if rc != 0:
        return None, "python module %s is not installed here" % mod
    p = out.strip()
    if not p:
        return "python3", ""  # compiled into the interpreter
    return owner(os.path.realpath(p)), "no package owns %s" % p


def installed_packages():
    """name -> (essential_or_required, [dependency alternatives...], provides)."""
    fmt = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Depends}, ${Pre-Depends}\t${Provides}\n"
    _, out = run(["dpkg-query", "-W", "-f=" + fmt])
    pk = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 6 or "installed" not in f[1].split()[-1:]:
            continue
        deps = []
        for d in f[4].split(","):
            alts = [re.sub(r"[:\s(].*", "", a.strip()) for a in d.split("|")]
            alts = [a for a in alts if a]
            if alts:
                deps.append(alts)
        provides = [re.sub(r"[:\s(].*", "", p.strip()) for p in f[5].split(",") if p.strip()]
        pk[f[0]] = (f[2] == "yes" or f[3] == "required", deps, provides)
    return pk


def closure(start, pk):
    providers = {}
    for name, (_, _, prov) in pk.items():
        for p in prov:
            providers.setdefault(p, []).append(name)
    seen, todo = set(), list(start)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for alts in pk.get(p, (False, [], []))[1]:
            for a in alts:
                for real in [a] + providers.get(a, []):
                    if real in pk and real not in seen:
                        todo.append(real)
    return seen


def read_list(path):
    names = []
    if os.path.exists(path):
        for line in read(path).splitlines():
            w = line.split("#")[0].split()
            if w:
                names.append(w[0])
    return names


def main():
    args = sys.argv[1:]
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    deps, verbose = None, False
    while args:
        a = args.pop(0)
        if a == "--deps" and args:
            deps = args.pop(0)
        elif a == "--list":
            verbose = True
        elif a == "--root" and args:
            root = os.path.abspath(args.pop(0))
        else:
            print("usage: deps_check.py [--deps DIR] [--root DIR] [--list]", file=sys.stderr)
            return 2
    deps = deps or os.path.join(root, "deps")
    if not shutil.which("dpkg"):
        print("not ok - dpkg is needed to map files to packages")
        return 1
    pk = installed_packages()
    always = closure([p for p, v in pk.items() if v[0]], pk)
    failures = 0
    for scope, lists, files, csrcs in SCOPES:
        listed = []
        for l in lists:
            listed += read_list(os.path.join(deps, l))
        covered = closure([p for p in listed if p in pk], pk) | set(listed) | always
        paths = sorted({p for g in files for p in glob.glob(os.path.join(root, g))})
        funcs, needs = set(), {}  # thing -> (kind, first file)
        for p in paths:
            if p.endswith(".sh"):
                funcs |= defined_functions(read(p))
        for p in paths:
            rel = os.path.relpath(p, root)
            text = read(p)
            if p.endswith(".py"):
                for m in re.finditer(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", text, re.M):
                    if not os.path.exists(os.path.join(os.path.dirname(p), m.group(1) + ".py")):
                        needs.setdefault(("module", m.group(1)), rel)
                continue
            libs = set()
            if p.endswith(".mk") or os.path.basename(p) == "Makefile":
                shell, libs = make_text(text, RUN_SKIP if scope == "make run" else [])
            else:
                shell = shell_text(text)
            for c in commands_in(shell):
                if c not in BUILTINS and c not in funcs and c not in BOOTSTRAP:
                    needs.setdefault(("command", c), rel)
            for l in libs:
                needs.setdefault(("library", l), rel)
        for g in csrcs:
            for p in glob.glob(os.path.join(root, g)):
                for m in re.finditer(r"^\s*#\s*include\s*<([^>]+)>", read(p), re.M):
                    needs.setdefault(("header", m.group(1)), os.path.relpath(p, root))
        bad = 0
        for (kind, name), rel in sorted(needs.items()):
            if kind == "command":
                pkg, why = resolve_command(name)
            elif kind == "library":
                pkg, why = resolve_lib(name)
            elif kind == "header":
                pkg, why = resolve_header(name, root)
            else:
                pkg, why = resolve_module(name)
            if verbose:
                print("# %s: %s %s (%s) -> %s" % (scope, kind, name, rel, pkg))
            if pkg is None:
                print("not ok - %s: %s %s (used by %s): %s" % (scope, kind, name, rel, why))
                bad += 1
            elif kind == "command" and name != pkg and pkg not in always and name in pk.get(pkg, (0, 0, []))[2] \
                    and name not in listed:
                # Here another package (e.g. NodeSource's nodejs, which bundles npm) provides
                # the command's own package; on Debian that is a package of its own: list it.
                print("not ok - %s: command %s (used by %s) comes from %s here, which provides "
                      "package %s; none of %s names %s" % (scope, name, rel, pkg, name,
                                                          " ".join(lists), name))
                bad += 1
            elif pkg not in covered:
                print("not ok - %s: %s %s (used by %s) is in package %s, which none of %s "
                      "names or pulls in" % (scope, kind, name, rel, pkg, " ".join(lists)))
                bad += 1
        if bad == 0:
            print("ok - %s: the %d commands, libraries, headers and modules it uses are covered "
                  "by %s" % (scope, len(needs), " ".join(lists)))
        failures += bad
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
