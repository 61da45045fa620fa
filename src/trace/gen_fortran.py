#!/usr/bin/env python3
"""Generate src/trace/trace_fort.c: the tracer's wrappers of the MPI Fortran bindings (mpif.h and
the `mpi` module), from the same tables as the C wrappers: trace_calls.def (the recorded calls;
their C signatures in trace_sig.def) and trace_count.def (the counted calls, with their signatures).

Each wrapper is defined under the four names Fortran compilers use (mpi_send_, mpi_send__,
mpi_send, MPI_SEND) and does one of two things, chosen at MPI_INIT (trace_core.c, tr_fort_mode):
- forward: the library's own Fortran binding calls the C MPI_ functions (MPICH 4), so the C
  wrappers already see the call: forward to the library's Fortran entry (pmpi_send_, found with
  dlsym(RTLD_NEXT)), which converts the arguments and calls MPI_Send, i.e. the tracer's wrapper;
- convert: the library's Fortran binding calls PMPI_ directly (Open MPI): convert the Fortran
  handles to C (MPI_Comm_f2c ...), map the Fortran sentinels (MPI_IN_PLACE, MPI_BOTTOM,
  MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY), call the tracer's C wrapper (which
  records exactly as for a C caller and calls PMPI_), and convert the results back.
Either way every call is recorded once. The build runs it (CMakeLists.txt: trace_fort.c in the
build directory's generated/); tests/py/test_trace_table.py checks the build's copy against it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HANDLES = ("Comm", "Datatype", "Op", "Group", "Info", "Request", "Message", "Win", "File", "Errhandler")
BUFFERS = {"buf", "buffer", "sendbuf", "recvbuf", "origin_addr", "result_addr", "compare_addr", "inbuf", "outbuf"}
WEIGHTS = {"weights", "sourceweights", "destweights"}
# array lengths: (function, parameter) -> C expression over the converted arguments
LENGTHS = {"array_of_requests": "{count}", "array_of_statuses": "{count}",
           "sendtypes": "tr_f_ntypes(c_comm, 0)", "recvtypes": "tr_f_ntypes(c_comm, 1)"}
NEIGHBOR_TYPES = {"sendtypes": "tr_f_nneigh(c_comm, 1)", "recvtypes": "tr_f_nneigh(c_comm, 0)"}


class Unsupported(Exception):
    pass


def parse_params(text: str) -> list[tuple[str, str, bool]]:
    """'(const int a[], MPI_Comm comm)' -> [(type, name, is_array)]"""
    text = text.strip()[1:-1].strip()
    if text in ("", "void"):
        return []
    out = []
    for p in text.split(","):
        p = p.strip()
        arr = p.endswith("]")
        p2 = re.sub(r"\[\]\[3\]$|\[\]$", "", p)
        if p.endswith("[][3]"):
            raise Unsupported("int[][3]")
        m = re.match(r"^(.*?)(\w+)$", p2)
        typ, name = m.group(1).strip(), m.group(2)
        out.append((typ, name, arr))
    return out


def base_type(t: str) -> str:
    return t.replace("const", "").replace("*", "").strip()


def param(fn: str, typ: str, name: str, arr: bool, count_name: str | None):
    """(Fortran parameter declaration, pre-call statements, C argument, post-call statements)"""
    b = base_type(typ)
    ptr = "*" in typ
    if b == "void" and ptr:
        if name == "base" and fn == "MPI_Win_create" or name in BUFFERS:
            return f"void *{name}", [], f"tr_f_buf({name})", []
        raise Unsupported(f"void *{name}")
    if b == "char" or b.startswith("MPI_User_function") or "(" in typ:
        raise Unsupported(typ)
    if b in ("int",) and not ptr and not arr:
        return f"MPI_Fint *{name}", [], f"(int)*{name}", []
    if b in ("MPI_Aint", "MPI_Offset", "MPI_Count") and not arr:
        return f"{b} *{name}", [], (f"{name}" if ptr else f"*{name}"), []
    if b in ("MPI_Aint", "MPI_Offset") and arr:
        return f"{b} *{name}", [], name, []
    if b == "int" and (ptr or arr):
        if name in WEIGHTS:
            return f"MPI_Fint *{name}", [], f"tr_f_weights({name})", []
        post = []
        if name == "index":   # Fortran indices count from 1
            post = [f"if (rc == MPI_SUCCESS && *{name} != MPI_UNDEFINED && *{name} >= 0) (*{name})++;"]
        if name == "array_of_indices":
            post = ["if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)",
                    f"    for (int i = 0; i < *outcount; i++) {name}[i]++;"]
        return f"MPI_Fint *{name}", [], f"(int *){name}", post
    if b == "MPI_Status":
        if arr:
            n = LENGTHS[name].format(count=f"(int)*{count_name}")
            pre = [f"int n_{name} = {n};",
                   f"MPI_Status *c_{name} = {name} == MPI_F_STATUSES_IGNORE ? MPI_STATUSES_IGNORE"
                   f" : tr_f_scratch(3, sizeof(MPI_Status) * (size_t)(n_{name} > 0 ? n_{name} : 1));",
                   # MPI_STATUSES_IGNORE may be NULL (Open MPI)
                   f"if (!c_{name} && {name} != MPI_F_STATUSES_IGNORE) {{ *ierr = MPI_ERR_NO_MEM; return; }}"]
            lim = "*outcount" if count_name == "incount" else f"n_{name}"
            post = [f"if ({name} != MPI_F_STATUSES_IGNORE)",
                    f"    for (int i = 0; i < {lim} && {lim} != MPI_UNDEFINED; i++)"
                    f" MPI_Status_c2f(&c_{name}[i], {name} + (size_t)i * TR_F_STATUS_SIZE);"]
            return f"MPI_Fint *{name}", pre, f"c_{name}", post
        if "const" in typ:   # an input status
            return (f"MPI_Fint *{name}", [f"MPI_Status c_{name};", f"MPI_Status_f2c({name}, &c_{name});"],
                    f"&c_{name}", [])
        pre = [f"MPI_Status c_{name}s, *c_{name} = {name} == MPI_F_STATUS_IGNORE ? MPI_STATUS_IGNORE : &c_{name}s;"]
        post = [f"if ({name} != MPI_F_STATUS_IGNORE) MPI_Status_c2f(c_{name}, {name});"]
        return f"MPI_Fint *{name}", pre, f"c_{name}", post
    h = b[4:] if b.startswith("MPI_") else None
    if h in HANDLES:
        if arr:
            slot = 1 if name.startswith("recv") else 0
            if h == "Request":
                n = f"(int)*{count_name}"
                pre = [f"int n_{name} = {n};",
                       f"MPI_Request *c_{name} = tr_f_scratch({slot}, sizeof(MPI_Request) * (size_t)(n_{name} > 0 ? n_{name} : 1));",
                       f"if (!c_{name}) {{ *ierr = MPI_ERR_NO_MEM; return; }}",
                       f"for (int i = 0; i < n_{name}; i++) c_{name}[i] = MPI_Request_f2c({name}[i]);"]
                post = [f"for (int i = 0; i < n_{name}; i++) {name}[i] = MPI_Request_c2f(c_{name}[i]);"]
                return f"MPI_Fint *{name}", pre, f"c_{name}", post
            if h == "Datatype":
                n = (NEIGHBOR_TYPES if "eighbor" in fn else LENGTHS).get(name, f"(int)*{count_name}")
                pre = [f"int n_{name} = {n};",
                       f"MPI_Datatype *c_{name} = tr_f_scratch({slot + 4}, sizeof(MPI_Datatype) * (size_t)(n_{name} > 0 ? n_{name} : 1));",
                       f"if (!c_{name}) {{ *ierr = MPI_ERR_NO_MEM; return; }}",
                       f"for (int i = 0; i < n_{name}; i++) c_{name}[i] = MPI_Type_f2c({name}[i]);"]
                return f"MPI_Fint *{name}", pre, f"c_{name}", []
            raise Unsupported(f"array of {h}")
        f2c = "Type" if h == "Datatype" else h
        if ptr:
            pre = [f"MPI_{h} c_{name} = MPI_{f2c}_f2c(*{name});"]
            post = [f"*{name} = MPI_{f2c}_c2f(c_{name});"]
            return f"MPI_Fint *{name}", pre, f"&c_{name}", post
        return f"MPI_Fint *{name}", [f"MPI_{h} c_{name} = MPI_{f2c}_f2c(*{name});"], f"c_{name}", []
    raise Unsupported(typ)


def wrapper(fn: str, params: list[tuple[str, str, bool]], ret: str) -> tuple[str, str]:
    """(C code, Fortran parameter list) of one wrapper"""
    lower = fn.lower()
    if ret == "double":
        if params:
            raise Unsupported("double with parameters")
        decl = "void"
        body = [f"static double tr_f_{lower}(void)", "{",
                f"    if (tr_f_mode() == TR_FORT_FORWARD) {{",
                f"        static double (*fp)(void);",
                f"        if (fp || (fp = (double (*)(void))tr_f_next(\"{lower}\"))) return fp();",
                "    }",
                f"    return {fn}();", "}"]
        aliases = [f"double {n}(void) __attribute__((alias(\"tr_f_{lower}\")));" for n in names(lower)]
        return "\n".join(body + aliases) + "\n", decl
    count_name = next((n for t, n, a in params if n in ("count", "incount")), None)
    fparams, pre, args, post = [], [], [], []
    for t, n, a in params:
        fp, pr, ar, po = param(fn, t, n, a, count_name)
        fparams.append(fp)
        pre += pr
        args.append(ar)
        post += po
    fparams.append("MPI_Fint *ierr")
    decl = ", ".join(fparams)
    fargs = ", ".join([p.split("*")[-1].strip() for p in fparams])
    body = [f"static void tr_f_{lower}({decl})", "{",
            "    if (tr_f_mode() == TR_FORT_FORWARD) {",
            f"        static void (*fp)({decl});",
            f"        if (fp || (fp = (void (*)({decl}))tr_f_next(\"{lower}\"))) {{",
            f"            fp({fargs});", "            return;", "        }", "    }"]
    # the communicator first: array lengths may need it
    pre.sort(key=lambda s: 0 if s.startswith("MPI_Comm c_comm ") else 1)
    body += ["    " + s for s in pre]
    body.append(f"    int rc = {fn}({', '.join(args)});")
    body += ["    " + s for s in post]
    body += ["    *ierr = (MPI_Fint)rc;", "}"]
    aliases = [f"void {n}({decl}) __attribute__((alias(\"tr_f_{lower}\")));" for n in names(lower)]
    return "\n".join(body + aliases) + "\n", decl


def names(lower: str) -> list[str]:
    """the symbols Fortran compilers make of MPI_SEND: gfortran/ifort mpi_send_, g77 and
    -fsecond-underscore mpi_send__, xlf and -fno-underscoring mpi_send, Cray and old Windows MPI_SEND"""
    return [lower + "_", lower + "__", lower, lower.upper()]


def tables():
    calls = re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)"', (HERE / "trace_calls.def").read_text(), re.M)
    sigs = dict(re.findall(r"^TR_SIG\((MPI_\w+), (\([^()]*\)), ", (HERE / "trace_sig.def").read_text(), re.M))
    counted = re.findall(r"^TR_COUNT\((\w+), (\w+), (\(.*?\)), \(.*\)\)$", (HERE / "trace_count.def").read_text(), re.M)
    return calls, sigs, counted


def generate() -> tuple[str, list[str]]:
    calls, sigs, counted = tables()
    names_rec = [n for _, n in calls]
    if set(names_rec) != set(sigs):
        raise SystemExit(f"trace_sig.def and trace_calls.def differ: {sorted(set(names_rec) ^ set(sigs))}")
    parts, skipped = [], []
    for n in names_rec:
        code, _ = wrapper(n, parse_params(sigs[n]), "int")
        parts.append(code)
    for ret, short, params in counted:
        n = "MPI_" + short
        try:
            code, _ = wrapper(n, parse_params(params), ret)
        except Unsupported:
            skipped.append(n)
            continue
        parts.append(code)
    head = ('/* GENERATED by src/trace/gen_fortran.py at build time from trace_calls.def, trace_sig.def and\n'
            ' * trace_count.def: do not edit. The wrappers of the MPI Fortran bindings (mpif.h, the mpi\n'
            ' * module); see gen_fortran.py and docs/trace.md (Fortran). Counted calls without a Fortran\n'
            ' * wrapper (string, callback or address arguments): ' + ", ".join(s[4:] for s in skipped) + '. */\n'
            '#include "trace/trace_fort.h"\n\n')
    return head + "\n".join(parts), skipped


def main(argv: list[str]) -> int:
    """gen_fortran.py OUT.c (the build: CMakeLists.txt), or gen_fortran.py --check OUT.c (0 when OUT.c
    is what the tables make now)"""
    text, skipped = generate()
    if argv[1:2] == ["--check"] and len(argv) == 3:
        out = Path(argv[2])
        return 0 if out.exists() and out.read_text() == text else 1
    if len(argv) != 2:
        print("usage: gen_fortran.py OUT.c | --check OUT.c", file=sys.stderr)
        return 2
    out = Path(argv[1])
    if not out.exists() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
