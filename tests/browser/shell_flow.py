"""The console's shell and the reference: `/` leads to the console; sign up, sign out,
a bad key refused in words, sign in again with the key, all by keyboard where a person
would; /docs renders the four served documents with Swagger UI from this server."""

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
    b.wait("h1", "Welcome")

    b.open("/docs")
    b.wait(".swagger-ui .info .title", "AgentLex", timeout=30)
    names = b.js("return [...document.querySelectorAll('.topbar select option')].map(o => o.textContent)")
    assert len(names) == 4, names
    b.shot("docs")


run("shell", steps)
