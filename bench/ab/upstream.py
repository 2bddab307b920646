#!/usr/bin/env python3
"""The generation row's upstream: bench/agents/generations.py's fake OpenAI-compatible
server (asyncio, loopback), answering at once. With `steps` 2 a generation is one model
call that asks for the `note` tool, the tool's call (`POST /tool` on this same fake), then
a second model call that answers. Prints its port, then serves until it is killed.

    python3 bench/ab/upstream.py [steps]
"""

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "agents"))
from generations import Fake  # noqa: E402  (the one fake; not a copy)


def main():
    fake = Fake()
    fake.delay = 0.0
    fake.steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(fake.port, flush=True)
    while True:
        time.sleep(3600)
        fake.take()  # its time counter is not read here: keep it from growing


if __name__ == "__main__":
    main()
