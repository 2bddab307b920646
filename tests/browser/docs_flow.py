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


SEEN = """return [
  Array.from(document.querySelectorAll('.swagger-ui .opblock')).map(o => [
    o.closest('.opblock-tag-section') && o.closest('.opblock-tag-section').querySelector('h3') ?
      o.closest('.opblock-tag-section').querySelector('h3').getAttribute('data-tag') : '',
    (o.querySelector('.opblock-summary-method') || {}).textContent,
    (o.querySelector('.opblock-summary-path') || {getAttribute: () => ''}).getAttribute('data-path')].join(' ')),
  Array.from(document.querySelectorAll(".swagger-ui section.models .model-container, .swagger-ui section.models article[data-json-schema-level='0']"))
    .map(m => m.getAttribute('data-name') || m.textContent.trim().split('\\n')[0]),
  Array.from(document.querySelectorAll('.swagger-ui .errors-wrapper')).map(e => e.textContent.trim()).filter(t => t)]"""


def walk(b, deadline):
    """Scrolls from the top to the bottom of the page; every operation block, schema and
    parser error rendered on the way."""
    ops, schemas, errors = set(), set(), set()
    b.d.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.3)
    last = -1
    while time.time() < deadline:
        o, s, e = b.d.execute_script(SEEN)
        ops.update(o)
        schemas.update(s)
        errors.update(e)
        y = b.d.execute_script("window.scrollBy(0, 400); return window.scrollY")
        time.sleep(0.1)
        if y == last:
            break
        last = y
    # Past 100 schemas Swagger UI (5.35) lists them in a box of their own that renders
    # the rows in view (`section.models--virtualized .models-scroll`): walk that box too.
    last = -1
    while time.time() < deadline and b.d.execute_script("return !!document.querySelector('.swagger-ui .models-scroll')"):
        schemas.update(b.d.execute_script(SEEN)[1])
        y = b.d.execute_script("const s = document.querySelector('.swagger-ui .models-scroll'); s.scrollTop += 200; return s.scrollTop")
        time.sleep(0.1)
        if y == last:
            break
        last = y
    return ops, schemas, errors


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
        # Swagger UI (5.x) renders a large document's blocks as they scroll into view, as
        # a reader scrolls: walk the page top to bottom and collect every block seen.
        b.wait(".swagger-ui .opblock", timeout=30)
        shown, schemas, errors = walk(b, time.time() + 60)
        assert len(shown) == want, f"{path}: Swagger UI shows {len(shown)} operations of {want}"
        assert not errors, f"{path}: Swagger UI could not read all of it: {errors}"
        # One entry per schema: a model container (3.0), a top-level JSON Schema article (3.1).
        assert len(schemas) == len(doc["components"].get("schemas", {})), f"{path}: {len(schemas)} schemas shown"
        b.d.execute_script("window.scrollTo(0, 0)")
        b.shot(f"docs-{i}")


run("docs", steps)
