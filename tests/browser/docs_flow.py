"""The reference renders every served OpenAPI document whole: for each of the four
(chosen in Swagger UI's own select), its title, one operation block per
operation and tag the document holds, and no error from Swagger UI's parser; the schemas
section lists every schema. Nothing is fetched from another host (the harness checks)."""

import time

from harness import run
from selenium.webdriver.support.ui import Select

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
DOCUMENTS = ["/openapi.json", "/openapi/agents.json", "/openapi/retrieval.json", "/openapi/gateway.json"]


def operations(doc):
    """The operation blocks Swagger UI shows: one per operation under each of its tags
    (one under "default" when it has none)."""
    return sum(max(1, len(op.get("tags", []))) for item in doc["paths"].values() for m, op in item.items() if m in METHODS)


def steps(b):
    b.open("/docs")
    b.wait(".swagger-ui .info .title", "AgentLex", timeout=30)
    select = Select(b.wait(".topbar select"))
    names = [o.text for o in select.options]
    assert len(names) == len(DOCUMENTS), names
    for i, (path, name) in enumerate(zip(DOCUMENTS, names)):
        status, doc = b.api("GET", path)
        assert status == 200, (path, status)
        Select(b.wait(".topbar select")).select_by_visible_text(name)
        b.wait(".swagger-ui .info .title", doc["info"]["title"].split(" (")[0], timeout=30)
        want = operations(doc)
        end = time.time() + 20
        while time.time() < end and len(b.all(".swagger-ui .opblock-summary-method")) != want:
            time.sleep(0.2)
        shown = len(b.all(".swagger-ui .opblock-summary-method"))
        assert shown == want, f"{path}: Swagger UI shows {shown} operations of {want}"
        errors = [e.text for e in b.all(".swagger-ui .errors-wrapper") if e.text.strip()]
        assert not errors, f"{path}: Swagger UI could not read all of it: {errors}"
        # One entry per schema: a model container (3.0), a top-level JSON Schema article (3.1).
        schemas = len(b.all(".swagger-ui section.models .model-container, .swagger-ui section.models article[data-json-schema-level='0']"))
        assert schemas == len(doc["components"].get("schemas", {})), f"{path}: {schemas} schemas shown"
        b.shot(f"docs-{i}")


run("docs", steps)
