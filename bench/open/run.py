#!/usr/bin/env python3
"""Zero-copy opening: the time from process start to the first answered keyword search,
and the RSS at that moment, for collections of 10k and 100k chunks.

Each collection is built once through the API (keyword-only server, so building is
quick), flushed into segments, and the server stopped. Then, `--rounds` times: start
`quarry serve`, send keyword searches in a tight loop until one answers 200, and read
VmRSS. Run with the embedder off, so the model's load time does not hide the index's.

    python3 bench/open/run.py [--sizes 10000,100000] [--rounds 5] [--embedder none]
"""
import argparse, json, os, random, shutil, signal, statistics, subprocess, sys, tempfile, time
import http.client
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "release", "quarry")
PLAN = open(os.path.join(ROOT, "bench", "evaluation-plan.toml")).read()
PAGES_PER_DOC = 4
EVAL_DIR = os.environ.get("EVAL_DIR") or os.path.join(ROOT, "..", "shared", "eval")
WORDS = [w.strip() for w in open(os.path.join(EVAL_DIR, "scifact", "corpus.jsonl")).read(400000).split() if w.isalpha()][:5000]


def request(port, method, path, key=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def serve(data, config, port):
    return subprocess.Popen([BIN, "serve", "--config", config, "--data", data, "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_up(port):
    for _ in range(600):
        try:
            if request(port, "GET", "/v1/health")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("the server did not start")


def build(dirpath, chunks, embedder, port):
    config = os.path.join(dirpath, "quarry.toml")
    with open(config, "w") as f:
        f.write(f'embedder = "{embedder}"\n[index]\nflush_interval = "1s"\n\n' + PLAN)
    data = os.path.join(dirpath, "data")
    out = subprocess.run([BIN, "accounts", "create", "--config", config, "--data", data, "--email", "open@quarry.invalid",
                          "--plan", "evaluation"], capture_output=True, text=True, check=True).stdout
    key = out.split("api key (shown once): ")[1].split()[0]
    p = serve(data, config, port)
    wait_up(port)
    status, body = request(port, "POST", "/v1/collections", key, {"name": "open"})
    col = json.loads(body)["id"]
    rng = random.Random(7)
    docs = chunks // PAGES_PER_DOC
    def page():
        return " ".join(rng.choice(WORDS) for _ in range(70)) + "."
    bodies = [{"title": f"doc {i}", "pages": [page() for _ in range(PAGES_PER_DOC)]} for i in range(docs)]
    t = time.time()
    with ThreadPoolExecutor(16) as ex:
        for status, body in ex.map(lambda b: request(port, "POST", f"/v1/collections/{col}/documents", key, b), bodies):
            if status != 201:
                sys.exit(f"add failed: {status} {body[:200]}")
    print(f"built {docs} documents ({chunks} chunks) in {time.time() - t:.1f} s", file=sys.stderr)
    time.sleep(3)  # the flush interval: the tail becomes a segment
    p.send_signal(signal.SIGTERM)
    p.wait()
    return data, config, key, col


def first_search(data, config, key, col, port):
    body = json.dumps({"query": "protein expression in cells", "mode": "keyword", "expand": False})
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    t0 = time.perf_counter()
    p = serve(data, config, port)
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", f"/v1/collections/{col}/search", body=body, headers=headers)
            r = c.getresponse()
            r.read()
            if r.status == 200:
                break
        except OSError:
            time.sleep(0.001)
    elapsed = time.perf_counter() - t0
    rss = next(int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS"))
    p.send_signal(signal.SIGTERM)
    p.wait()
    return elapsed, rss


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--sizes", default="10000,100000")
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--embedder", default="none")
    a.add_argument("--port", type=int, default=4473)
    args = a.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="quarry-open-")
    try:
        built = {n: build(os.path.join(work, str(n)), n, args.embedder, args.port) for n in sizes if not os.makedirs(os.path.join(work, str(n)))}
        results = {n: [] for n in sizes}
        for _ in range(args.rounds):
            for n in sizes:  # alternate sizes within each round, so drift hits both
                results[n].append(first_search(*built[n], args.port))
        base = statistics.median(t for t, _ in results[sizes[0]])
        print(f"Embedder: {args.embedder}. Median of {args.rounds} starts each; sizes alternate within each round.\n")
        print("| chunks | segment bytes | start → first keyword search (median) | vs smallest | RSS at that moment |")
        print("|---:|---:|---:|---:|---:|")
        for n in sizes:
            t = statistics.median(t for t, _ in results[n])
            rss = statistics.median(r for _, r in results[n])
            seg = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(built[n][0]) for f in fs if f.endswith(".seg"))
            print(f"| {n:,} | {seg / 1e6:.1f} MB | {t * 1000:.0f} ms | {t / base:.2f}x | {rss / 1024:.0f} MiB |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
