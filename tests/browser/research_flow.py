"""Research from the console: sign up, a collection with one small contract (made through
the API: the collections pages are another flow's), then the research page by keyboard.
A question the scripted model fails on is an error in words. Then the scripted model (tests/it/browser.rs) answers with a quotation of the page and cites
it; its judge is slow, so the page is seen mid-stream: stages listed, the draft written,
no result yet. Then the result: the answer's [1] links to the cited page's view, the
source list names the document, one claim is marked supported (in words, with evidence
that is the page's own text) and one partly supported, styled apart."""

from harness import run

MSA = ("2. Audit\n\n2.1 Provider shall permit one audit per year on reasonable notice.\n"
       "2.2 Provider shall keep records of each audit for three years.")
QUESTION = "How often may the customer audit the provider?"


def steps(b):
    key = b.sign_up("research@browser.test")
    status, col = b.api("POST", "/v1/collections", {"name": "Contracts"}, key)
    assert status == 201, col
    status, doc = b.api("POST", f"/v1/collections/{col['id']}/documents", {"title": "MSA", "text": MSA}, key)
    assert status == 201, doc

    b.go(f"/collections/{col['id']}/research")
    b.wait("h1", "Research")
    b.wait(".rs-context a", "Contracts")
    b.shot("research-form")

    # The model fails (the scripted upstream answers 500 to this question): the stream's
    # last event is an error, said in words, and the form stays usable.
    b.fill("Question", "What are the audit fees?")
    b.press("Research")
    err = b.wait(".rs-out [role=alert]", timeout=30)
    assert "model provider" in err.text and "llm_error" in err.text, err.text
    b.wait(".rs-steps li", "Stopped with an error")
    b.shot("research-failed")

    b.fill("Question", QUESTION)
    b.select("Tier", "Fast: a few search steps")
    assert b.field("Show progress as it streams").is_selected()
    b.tab_to("Research").send_keys("\n")

    # Mid-stream: the judge takes seconds, so the stages and the draft are on the page
    # while no result is.
    b.wait(".rs-steps li", "Searched")
    b.wait(".rs-steps li", "Checking every quotation and claim", timeout=30)
    draft = b.wait(".rs-draft", "one audit per year")
    assert "[" in draft.text, draft.text
    assert not b.all(".rs-result"), "the result came before the judge answered"
    assert b.all("#rs-go")[0].get_attribute("disabled") is not None, "the button is busy while it streams"
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".rs-progress")
    b.shot("research-streaming")

    b.wait(".rs-steps li", "Done", timeout=30)
    answer = b.wait(".rs-answer-text", "one audit per year on reasonable notice")
    cites = b.all(".rs-answer-text a.rs-cite")
    assert cites and cites[0].text == "[1]", [c.text for c in cites]
    page_route = f"#/collections/{col['id']}/documents/{doc['id']}/pages/0"
    assert cites[0].get_attribute("href").endswith(page_route), cites[0].get_attribute("href")
    source = b.wait(".rs-source-list li", "MSA, page 1")
    assert source.find_element("css selector", "a").get_attribute("href").endswith(page_route)

    supported = b.wait(".rs-claim-item[data-verdict=supported]")
    assert "Supported" in supported.text, supported.text
    evidence = supported.find_element("css selector", ".rs-evidence").text
    assert "Provider shall permit one audit per year on reasonable notice." in evidence, evidence
    status, page = b.api("GET", f"/v1/collections/{col['id']}/documents/{doc['id']}/pages/0", None, key)
    assert status == 200 and "Provider shall permit one audit per year on reasonable notice." in page["page"]["text"]
    partial = b.wait(".rs-claim-item[data-verdict=partial]")
    assert "Partly supported" in partial.text, partial.text
    # Not colour alone: each verdict in the answer has a word and its own border style.
    marks = b.js("return [...document.querySelectorAll('.rs-answer-text .rs-claim')].map(e => "
                 "[e.dataset.verdict, e.querySelector('.rs-verdict').textContent.trim(), getComputedStyle(e).borderBottomStyle])")
    assert [m[0] for m in marks] == ["supported", "partial"], marks
    assert marks[0][1] == "✓ Supported" and marks[1][1] == "◐ Partly supported", marks
    assert marks[0][2] != marks[1][2], marks
    b.wait(".rs-quotes h2", "Quotations: 1 of 1 verified")
    b.wait(".rs-summary", "1 of 2 claims supported")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".rs-answer")
    b.shot("research-answer")

    # Not streamed: the page waits, then shows the same checked answer at once.
    b.d.execute_script("arguments[0].scrollIntoView()", b.field("Show progress as it streams"))
    b.field("Show progress as it streams").click()
    assert not b.field("Show progress as it streams").is_selected()
    b.press("Research")
    b.wait(".rs-waiting", "Researching")
    b.wait(".rs-answer-text", "one audit per year on reasonable notice", timeout=30)
    assert not b.all(".rs-steps"), "no stages without a stream"
    b.wait(".rs-claim-item[data-verdict=supported]")
    cites = b.all(".rs-answer-text a.rs-cite")

    # The citation is a link a keyboard follows to the cited page.
    b.d.execute_script("arguments[0].focus()", cites[0])
    cites[0].send_keys("\n")
    end = b.js("return location.hash")
    assert end == page_route, end
    b.shot("research-cited-page")


run("research", steps)
