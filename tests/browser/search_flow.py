"""Collections, documents and search in the console: sign up, create a collection, load
a sample corpus, search and see each result's citation and its passages with the matched
words marked exactly at the offsets the API answered (the script asks the API the same
question and compares), open the page view and see its chunks with their kinds, paste a
document after its chunk preview and page through it, scan a text for identifiers, see a
bad request explained in words, edit the settings and delete the collection. Buttons are
pressed from the keyboard where a person would."""

import os
import tempfile
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import run

QUERY = "confidential"
PASTED = ("# Tides\n\nThe spring tide rises twice a month.\n\n- high water\n- low water\n"
          "\n--- page 2 ---\n\n🌊 𝔗he Kraków neap tide follows the first and third quarter moons; neap tides are weak.")
CSV = "drug,dose\nlisinopril,20 mg\nmetformin,500 mg\n"
SCANNED = "Call 555-123-4567 or write to ada@example.com about the 2024-01-15 visit."


def summary(b, text):
    """Opens a <details> by its summary, from the keyboard."""
    s = b.d.find_element(By.XPATH, f"//summary[normalize-space()='{text}']")
    b.js("arguments[0].scrollIntoView({block:'center'}); arguments[0].focus()", s)
    s.send_keys(Keys.ENTER)
    assert s.find_element(By.XPATH, "..").get_attribute("open") is not None, f"{text} did not open"


def into_view(b, css):
    """Scrolls the step's evidence to the top for its screenshots, again after each
    change of width (the page reflows)."""
    b.js("""window.__shotAt = arguments[0];
      const at = () => { const e = window.__shotAt && document.querySelector(window.__shotAt); if (e) e.scrollIntoView({block: 'start'}); };
      if (!window.__shotHook) { window.__shotHook = true; window.addEventListener('resize', () => setTimeout(at, 0)); }
      at();""", css)


def marks_of(el, p):
    """The passage element shows the API passage `p` exactly, its <mark>s at the API's
    highlights (page offsets) and reading the text there; returns the marked words."""
    assert el.get_attribute("textContent") == p["text"], "the passage text is the API's"
    chars = list(p["text"])  # the API's offsets count code points, as Python's str does
    base = p["offsets"]["start"]
    want = [("".join(chars[x["start"] - base:x["end"] - base]), x["start"], x["end"]) for x in p["highlights"]]
    got = [(m.get_attribute("textContent"), int(m.get_attribute("data-start")), int(m.get_attribute("data-end")))
           for m in el.find_elements(By.CSS_SELECTOR, "mark")]
    assert got == want, (got, want)
    return [text for text, _, _ in got]


def steps(b):
    key = b.sign_up("search@browser.test")

    # A collection, created from the list page.
    b.go("/collections")
    b.wait("h1", "Collections")
    b.wait("p", "No collections yet")
    b.fill("Name", "Contracts")
    b.select("Domain", "Legal")
    b.press("Create collection")
    b.wait("h1", "Contracts")
    b.wait("[role=status]", "Created “Contracts”")
    col = b.js("return location.hash.split('/')[2]")
    assert col.startswith("col_"), col
    b.shot("collection-created")

    # The legal sample, indexed through the API's sample route.
    summary(b, "Load a sample corpus")
    b.select("Sample", "Legal: contracts, an opinion, US Code title 1")
    b.press("Load sample")
    done = b.wait(".sample [role=status]", "Indexed the legal sample", timeout=180)
    status, docs = b.api("GET", f"/v1/collections/{col}/documents", key=key)
    assert status == 200 and docs["documents"], docs
    assert f"{len(docs['documents'])} documents" in done.text, done.text
    rows = b.all("table.docs tbody tr")
    assert len(rows) == len(docs["documents"]), (len(rows), len(docs["documents"]))
    into_view(b, "table.docs")
    b.shot("sample-loaded")

    # A search: the page's answer is the API's, marks at the API's offsets.
    b.click("Search")
    b.wait("h1", "Search Contracts")
    b.fill("Query", QUERY).send_keys(Keys.ENTER)
    b.wait(".hit .citation")
    status, answer = b.api("POST", f"/v1/collections/{col}/search",
                           {"query": QUERY, "mode": "hybrid", "k": 10, "expand": True}, key=key)
    assert status == 200 and answer["results"], answer
    shown = [c.text for c in b.all(".hit .citation")]
    assert shown == [r["citation"] for r in answer["results"]], (shown, answer["results"])
    first = answer["results"][0]
    hit = b.all(".hit")[0]
    assert (first["document"]["title"] or first["document"]["id"]) in hit.find_element(By.CSS_SELECTOR, "h3").text
    passages = hit.find_elements(By.CSS_SELECTOR, ".passage-text")
    assert len(passages) == len(first["passages"])
    query_marks = 0
    for el, p in zip(passages, first["passages"]):
        query_marks += sum(1 for text in marks_of(el, p) if text.lower() == QUERY)
    assert query_marks > 0, f"no mark reads {QUERY!r} in the first result"
    into_view(b, ".answer-head")
    b.shot("search-results")

    # The page view from the first passage: its chunks and their kinds, as the API has them.
    pos = first["passages"][0]["pos"]
    # From the query box, Tab alone reaches the result's link to its page.
    b.tab_to(f"Open chunk {pos} on its page").send_keys(Keys.ENTER)
    b.wait("h2", "The page, chunk by chunk")
    status, page = b.api("GET", f"/v1/collections/{col}/documents/{first['document']['id']}/pages/{first['page']['n']}", key=key)
    assert status == 200
    chunks = b.all(".page-chunks .chunk")
    assert len(chunks) == len(page["chunks"]), (len(chunks), len(page["chunks"]))
    for el, c in zip(chunks, page["chunks"]):
        kinds = [k.text for k in el.find_elements(By.CSS_SELECTOR, ".badge.kind")]
        assert kinds == c["kinds"], (kinds, c["kinds"])
    focused = b.wait(".chunk.focus")
    assert focused.get_attribute("id") == f"chunk-{pos}"
    # The search's marks carry over, at the same page offsets.
    want = [(x["start"], x["end"]) for x in first["passages"][0]["highlights"]]
    got = [(int(m.get_attribute("data-start")), int(m.get_attribute("data-end"))) for m in focused.find_elements(By.CSS_SELECTOR, "mark")]
    assert got == want, (got, want)
    assert page["page"]["citation"] in b.text(".page-info")
    b.shot("page-view")
    b.click("← Back to the search results")
    b.wait(".hit .citation")
    assert b.field("Query").get_attribute("value") == QUERY

    # A pasted document: its chunk preview first (the API's), then added, then paged.
    b.click("Documents")
    b.wait("h2", "Documents")
    b.fill("Title", "Tides")
    b.fill("Text", PASTED)
    b.press("Preview chunks")
    b.wait(".preview h3", "Chunk preview")
    status, preview = b.api("POST", "/v1/chunk", {"title": "Tides", "content": PASTED, "format": "auto"})
    assert status == 200 and len(preview["pages"]) == 2, preview
    shown = b.all(".preview .chunk")
    assert len(shown) == sum(len(p["chunks"]) for p in preview["pages"])
    want_kinds = [c["kinds"] for p in preview["pages"] for c in p["chunks"]]
    got_kinds = [[k.text for k in el.find_elements(By.CSS_SELECTOR, ".badge.kind")] for el in shown]
    assert got_kinds == want_kinds, (got_kinds, want_kinds)
    into_view(b, ".paste .preview")
    b.shot("chunk-preview")
    b.press("Add document")
    b.wait(".paste [role=status]", "Added “Tides”: 2 pages")
    b.wait("table.docs td", "Tides")
    b.shot("document-added")
    b.click("Open its first page")
    b.wait("span", "Page 1 of 2")
    b.press("Next page →")
    b.wait("span", "Page 2 of 2")
    assert "neap tide" in b.text(".page-chunks")
    b.shot("page-two")

    # Marks after characters outside the BMP and with diacritics land where the API says.
    b.click("Search")
    b.wait("h1", "Search Contracts")
    b.fill("Query", "neap krakow").send_keys(Keys.ENTER)
    b.wait(".hit .citation")
    status, answer = b.api("POST", f"/v1/collections/{col}/search",
                           {"query": "neap krakow", "mode": "hybrid", "k": 10, "expand": True}, key=key)
    tides = next(r for r in answer["results"] if r["document"]["title"] == "Tides")
    el = b.all(".hit")[answer["results"].index(tides)].find_elements(By.CSS_SELECTOR, ".passage-text")[0]
    assert marks_of(el, tides["passages"][0]) == ["Kraków", "neap", "neap"], tides["passages"][0]
    b.shot("search-marks-unicode")

    # A file: a CSV read in the browser, previewed and added as the API reads it; a
    # file that is not text is refused in words before anything is sent.
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "drugs.csv")
    with open(path, "w") as f:
        f.write(CSV)
    b.go(f"/collections/{col}")
    b.wait("h2", "Documents")
    summary(b, "Upload a file")
    b.field("File").send_keys(path)
    b.press("Preview chunks", within=b.d.find_element(By.CSS_SELECTOR, "form.upload"))
    b.wait(".upload .preview h3", "Chunk preview")
    status, preview = b.api("POST", "/v1/chunk", {"title": "drugs", "metadata": {"file": "drugs.csv"}, "csv": CSV})
    assert status == 200 and preview["format"] == "csv", preview
    assert "Read as csv" in b.text(".upload .preview")
    got = [[k.text for k in el.find_elements(By.CSS_SELECTOR, ".badge.kind")] for el in b.all(".upload .preview .chunk")]
    assert got == [c["kinds"] for p in preview["pages"] for c in p["chunks"]], got
    b.press("Add document", within=b.d.find_element(By.CSS_SELECTOR, "form.upload"))
    b.wait(".upload [role=status]", "Added “drugs”")
    b.wait("table.docs td", "drugs")
    into_view(b, "form.upload")
    b.shot("file-added")
    binary = os.path.join(tmp, "report.pdf")
    with open(binary, "wb") as f:
        f.write(b"%PDF-1.7\n\xff\xfe\x00\x81 not text")
    b.field("File").send_keys(binary)
    b.press("Preview chunks", within=b.d.find_element(By.CSS_SELECTOR, "form.upload"))
    err = b.wait(".upload [role=alert]")
    assert "not UTF-8 text" in err.text and "report.pdf" in err.text, err.text
    into_view(b, "form.upload")
    b.shot("file-refused")
    # A document deleted from its row, after the question (which starts on Cancel).
    row = b.d.find_element(By.XPATH, "//table[contains(@class,'docs')]//tr[td//a[normalize-space()='drugs']]")
    b.press("Delete", within=row)
    assert b.d.switch_to.active_element.text == "Cancel"
    b.press("Delete document", within=row)
    b.wait(".msg [role=status]", "Deleted “drugs”")
    status, docs = b.api("GET", f"/v1/collections/{col}/documents", key=key)
    assert "drugs" not in [d["title"] for d in docs["documents"]], docs
    assert b.d.switch_to.active_element.text == "Documents", "focus lands on the list's heading"
    for name in ("drugs.csv", "report.pdf"):
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)

    # Identifiers: counts by kind and the masked preview, as the API gives them.
    b.go("/scan")
    b.wait("h1", "Identifiers scan")
    b.fill("Text", SCANNED)
    b.press("Scan")
    b.wait("#scan-out h2", "identifiers found")
    status, scan = b.api("POST", "/v1/scan", {"text": SCANNED}, key=key)
    assert status == 200 and scan["total"] == 3, scan
    assert b.text("#scan-out h2") == f"{scan['total']} identifiers found"
    assert b.text("#scan-out pre.masked") == scan["masked_preview"]
    for kind, n in scan["counts"].items():
        assert f"({kind}) {n}" in b.text("#scan-out table").replace("\n", " "), kind
    into_view(b, "#scan-out")
    b.shot("scan")

    # A bad request, explained in words (the API's own message, and what to do).
    b.go(f"/collections/{col}/search")
    b.wait("h1", "Search Contracts")
    summary(b, "Filters")
    b.fill("Date from", "sometime soon")
    b.fill("Query", QUERY).send_keys(Keys.ENTER)
    err = b.wait("#results [role=alert]")
    status, refused = b.api("POST", f"/v1/collections/{col}/search",
                            {"query": QUERY, "mode": "hybrid", "k": 10, "expand": True, "filters": {"date": {"from": "sometime soon"}}}, key=key)
    assert status == 400, (status, refused)
    assert "The request was not accepted." in err.text and refused["error"]["message"] in err.text, err.text
    assert refused["error"]["code"] in err.text
    into_view(b, "#results")
    b.shot("search-error")

    # The address keeps a search whole, & + % and quotes included: a reload runs it again.
    tricky = '"Receiving Party" & 100%+ notice'
    b.fill("Date from", "")
    b.fill("Query", tricky).send_keys(Keys.ENTER)
    b.wait(".answer-head")
    b.js("window.__old = true; location.reload()")
    end = time.time() + 20
    while b.js("return window.__old === true") and time.time() < end:
        time.sleep(0.1)
    b.wait(".answer-head")
    assert b.field("Query").get_attribute("value") == tricky, b.field("Query").get_attribute("value")
    b.shot("search-reloaded")

    # Settings, then the collection deleted after a confirmation.
    b.click("Settings")
    b.wait("h1", "Settings of Contracts")
    b.fill("Guidance", "Cite the NDA first.")
    b.press("Save settings")
    b.wait(".msg [role=status]", "Saved.")
    status, c = b.api("GET", f"/v1/collections/{col}", key=key)
    assert status == 200 and c["settings"]["guidance"] == "Cite the NDA first.", (status, c)
    b.press("Delete this collection…")
    assert b.d.switch_to.active_element.text == "Cancel", "the confirmation starts on Cancel"
    into_view(b, ".danger-zone")
    b.shot("delete-confirm")
    b.press("Delete for good")
    b.wait("h1", "Collections")
    b.wait("[role=status]", "Deleted “Contracts”")
    status, _ = b.api("GET", f"/v1/collections/{col}", key=key)
    assert status == 404
    b.shot("deleted")


run("search", steps)
