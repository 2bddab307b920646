"""The harness's own bookkeeping: which runs a run taken up again (`--rest-of`) still
asks, and the report of a run in two sittings."""
import unittest

import run


def question(i):
    return {"id": f"q{i}", "corpus": "legal"}


class RestOf(unittest.TestCase):
    def test_a_run_taken_up_again_asks_only_what_it_lacks(self):
        tiers = [(question(1), "fast"), (question(2), "fast"), (question(1), "deep"), (question(1), "fast again")]
        held = [{"id": "q1", "tier": "fast", "again": False}, {"id": "q1", "tier": "fast", "again": True}]
        left = [(q["id"], t) for q, t in run.remaining(tiers, held)]
        self.assertEqual(left, [("q2", "fast"), ("q1", "deep")])

    def test_the_report_names_each_sitting(self):
        sitting = {"started": "2026-12-06T03:08:33+00:00", "command": "bench/research/run.sh --timeout 300", "commit": "8e563cc",
                   "load_before": "1.0 1.0 1.0", "load_after": "2.0 2.0 2.0", "runs_done": 40}
        meta = {"date": "2026-12-06", "command": "c", "commit": "abc", "cpus": 2, "load_before": "1", "load_after": "1",
                "finished": True, "binary": "b", "local_model": "m", "nice": None, "embedder": "e", "selected": 2, "in_set": 2,
                "timeout": 300, "plain": False, "k": 8, "collections": {}, "sittings": [sitting, sitting | {"runs_done": 13}]}
        md = run.report(meta, [])
        self.assertIn("- 2026-12-06T03:08:33+00:00: 40 runs, commit 8e563cc", md)
        self.assertIn(": 13 runs,", md)


if __name__ == "__main__":
    unittest.main()
