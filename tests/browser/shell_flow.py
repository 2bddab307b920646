"""The console's shell and the reference: `/` leads to the console; sign up, sign out,
a bad key refused in words, sign in again with the key, all by keyboard where a person
would, a read refused for the rate retried; /docs renders the four served documents with Swagger UI from this server."""

from harness import run, BASE


def steps(b):
    b.open("/")
    assert b.d.current_url.startswith(BASE + "/console"), b.d.current_url
    key = b.sign_up("shell@browser.test")
    b.wait("dd", "shell@browser.test")
    b.shot("home")

    b.click("Sign out")
    b.wait("h2", "Sign in with a key")
    b.fill("API key", "al_not_a_real_key")
    b.press("Sign in")
    err = b.wait("[role=alert]")
    assert "key was not accepted" in err.text, err.text
    b.shot("bad-key")

    b.fill("API key", key)
    b.tab_to("Sign in").send_keys("\n")
    # The plan allows a burst of one: the start page's read right after the sign-in's
    # own is refused (429, retry-after 1) and the console tries it once more.
    b.wait("h1", "Welcome")
    b.wait("dd", "shell@browser.test")
    b.check()
    refused = [u for u, status in b.responses if status == 429 and u.endswith("/v1/account")]
    assert refused, f"no read was refused for the rate: {b.responses}"

    b.open("/docs")
    b.wait(".swagger-ui .info .title", "AgentLex", timeout=30)
    names = b.js("return [...document.querySelectorAll('.topbar select option')].map(o => o.textContent)")
    assert len(names) == 4, names
    b.shot("docs")


run("shell", steps)
