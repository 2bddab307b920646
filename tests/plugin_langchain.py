"""Drives Quarry's retrieval plugin with langchain-community's ChatGPTPluginRetriever.
Reads {"base", "key"} from stdin; the server holds four tea documents (tests/it/plugin.rs
upserts them): tea-1 and tea-3 by Ann (source file; tea-1 with source_id handbook.md),
tea-2 by Bo (web), tea-4 by Cy (chat). Prints "N passed, M failed"; exits 1 on a failure."""
import asyncio
import json
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)
from langchain_community.retrievers import ChatGPTPluginRetriever  # noqa: E402

spec = json.load(sys.stdin)
passed, failed = 0, []


def retriever(url, **kw):
    return ChatGPTPluginRetriever(url=url, bearer_token=spec["key"], **kw)


def ids(docs):
    return [d.metadata["document_id"] for d in docs]


def by_author():
    docs = retriever(spec["base"], top_k=2, filter={"author": "Ann"}).invoke("green tea steeped")
    assert ids(docs) == ["tea-1", "tea-3"], ids(docs)
    assert docs[0].page_content.startswith("Green tea"), docs[0].page_content
    # The retriever moves source_id into source, as it does for the plugin.
    assert docs[0].metadata["source"] == "handbook.md", docs[0].metadata
    assert all(d.metadata["author"] == "Ann" for d in docs)


def by_source_under_sub():
    docs = retriever(spec["base"] + "/sub", top_k=3, filter={"source": "web"}).invoke("tea boiling water")
    assert ids(docs) == ["tea-2"], ids(docs)
    assert docs[0].metadata["url"] == "https://example.com/tea", docs[0].metadata


def top_k_without_filter():
    docs = retriever(spec["base"], top_k=3).invoke("tea")
    assert len(docs) == 3, ids(docs)
    assert len(retriever(spec["base"], top_k=1).invoke("tea")) == 1


def async_equals_sync():
    r = retriever(spec["base"], top_k=4, filter={"source": "file"})
    sync = r.invoke("oolong tea")
    async_ = asyncio.run(r.ainvoke("oolong tea"))
    assert ids(sync) == ids(async_) == ["tea-3", "tea-1"], (ids(sync), ids(async_))


for check in [by_author, by_source_under_sub, top_k_without_filter, async_equals_sync]:
    try:
        check()
        passed += 1
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failed.append(f"{check.__name__}: {type(e).__name__}: {e}")

for f in failed:
    print("FAILED", f)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
