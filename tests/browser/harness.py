"""The browser tests' harness: Debian's chromium, headless, driven by selenium through
Debian's chromedriver, with every host but 127.0.0.1 unreachable (the resolver maps
every other name to nothing and every other address goes to a dead proxy) and every
request the page makes logged and checked. `Browser.shot(name)` writes the page at
360 px and at 1280 px wide (name-360.png, name-1280.png) under $QUARRY_SHOTS, and checks
that nothing is wider than the screen. tests/it/browser.rs runs each flow script with
QUARRY_URL (the server) and QUARRY_SHOTS set."""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

BASE = os.environ.get("QUARRY_URL", "http://127.0.0.1:4400").rstrip("/")
SHOTS = os.environ.get("QUARRY_SHOTS", "target/browser-shots")
WIDTHS = (360, 1280)
HEIGHT = 900


def log(*args):
    print("[browser]", *args, flush=True)


class Browser:
    def __init__(self, flow):
        self.flow = flow
        self.dir = os.path.join(SHOTS, flow)
        os.makedirs(self.dir, exist_ok=True)
        self.shots = []
        opts = webdriver.ChromeOptions()
        opts.binary_location = "/usr/bin/chromium"
        for a in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--metrics-recording-only",
            # Nothing but loopback: names resolve to nothing, and any address that is not
            # loopback (which chromium never proxies) goes to a proxy that is not there.
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--proxy-server=http://127.0.0.1:9",
            f"--window-size={WIDTHS[-1]},{HEIGHT}",
            "--lang=en-US",
        ):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        os.environ.setdefault("SE_OFFLINE", "true")
        self.d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        self.d.set_page_load_timeout(30)
        self.d.execute_cdp_cmd("Network.enable", {})
        self.requests = []
        self.responses = []
        self.js_errors = []
        self.width(WIDTHS[-1])

    # ---- the page ----

    def open(self, path="/console"):
        self.d.get(BASE + path)
        return self

    def go(self, route):
        """A console route, e.g. '/collections' (the hash router)."""
        self.d.execute_script("location.hash = arguments[0]", "#" + route)
        return self

    def width(self, w):
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": w, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": w < 600})

    def wait(self, css, text=None, timeout=20, visible=True):
        """The first element matching `css` (containing `text`, if given), waiting for it."""
        end = time.time() + timeout
        last = None
        while time.time() < end:
            try:
                for el in self.d.find_elements(By.CSS_SELECTOR, css):
                    if visible and not el.is_displayed():
                        continue
                    if text is None or text in el.text:
                        return el
                    last = el.text
            except StaleElementReferenceException:
                pass
            time.sleep(0.1)
        self.shot(f"timeout-{css}".replace(" ", "_").replace("/", "_")[:60], check=False)
        raise TimeoutException(f"no {css!r}{' with ' + repr(text) if text else ''} within {timeout}s "
                               f"(last text {last!r}); page text:\n{self.text()[:3000]}")

    def wait_gone(self, css, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if not [e for e in self.d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]:
                return
            time.sleep(0.1)
        raise TimeoutException(f"{css!r} still shown after {timeout}s")

    def all(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def text(self, css="body"):
        return self.d.find_element(By.CSS_SELECTOR, css).text

    def fill(self, label, value):
        """Types into the field whose <label> says `label` (so fields must be labelled)."""
        el = self.field(label)
        el.clear()
        el.send_keys(value)
        return el

    def field(self, label):
        for lab in self.d.find_elements(By.CSS_SELECTOR, "label"):
            if lab.is_displayed() and lab.text.strip().rstrip(":") == label:
                target = lab.get_attribute("for")
                if target:
                    return self.d.find_element(By.ID, target)
                return lab.find_element(By.CSS_SELECTOR, "input,select,textarea")
        raise AssertionError(f"no visible field labelled {label!r}; labels: "
                             f"{[l.text for l in self.d.find_elements(By.CSS_SELECTOR, 'label') if l.is_displayed()]}")

    def select(self, label, visible_text):
        from selenium.webdriver.support.ui import Select
        Select(self.field(label)).select_by_visible_text(visible_text)

    def button(self, text, within=None):
        scope = within or self.d
        end = time.time() + 20
        while time.time() < end:
            # Buttons before links: a page's own action wins over a nav link of that name.
            for css in ("button, [role=button], input[type=submit]", "a"):
                for b in scope.find_elements(By.CSS_SELECTOR, css):
                    if b.is_displayed() and b.text.strip() == text and b.is_enabled():
                        return b
            time.sleep(0.1)
        raise AssertionError(f"no enabled button or link {text!r}; page text:\n{self.text()[:2000]}")

    def click(self, text, within=None):
        b = self.button(text, within)
        self.d.execute_script("arguments[0].scrollIntoView({block:'center'})", b)
        b.click()
        return b

    def press(self, text, within=None):
        """Activates a control by the keyboard: focuses it, then Enter (a keyboard user's way)."""
        b = self.button(text, within)
        self.d.execute_script("arguments[0].focus()", b)
        assert self.d.switch_to.active_element == b, f"{text!r} cannot take focus"
        b.send_keys(Keys.ENTER)
        return b

    def tab_to(self, text, limit=80):
        """Presses Tab until the focused element's text (or label/value) is `text`: proof
        that a keyboard alone reaches it."""
        body = self.d.find_element(By.TAG_NAME, "body")
        for _ in range(limit):
            el = self.d.switch_to.active_element
            label = (el.text or el.get_attribute("aria-label") or el.get_attribute("value") or "").strip()
            if label == text:
                return el
            (el if el else body).send_keys(Keys.TAB)
        raise AssertionError(f"Tab never reached {text!r}")

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    # ---- the API, as the script's own check of what the page shows ----

    def api(self, method, path, body=None, key=None):
        req = urllib.request.Request(BASE + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"content-type": "application/json",
                                              **({"authorization": f"Bearer {key}"} if key else {})})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, (json.loads(raw) if raw else None)

    def key(self):
        return self.js("return sessionStorage.getItem('quarry.key')")

    # ---- common steps ----

    def sign_up(self, email):
        """Signs up from the console's sign-in page and continues; returns the key."""
        self.open("/")
        self.wait("h2", "Create an account")
        self.fill("Email", email)
        self.click("Create account")
        key_el = self.wait("#new-key")
        key = key_el.text.strip()
        assert key.startswith("al_"), key
        self.shot("signed-up")
        self.click("I have stored it: continue")
        self.wait("h1", "Welcome")
        return key

    # ---- evidence ----

    def shot(self, name, check=True):
        """The page at each width, written as files; at each, nothing may be wider than
        the screen (the page must not scroll sideways)."""
        for w in WIDTHS:
            self.width(w)
            time.sleep(0.15)
            path = os.path.join(self.dir, f"{name}-{w}.png")
            self.d.save_screenshot(path)
            self.shots.append(path)
            if check:
                over = self.js("return document.documentElement.scrollWidth - window.innerWidth")
                assert over <= 1, f"{name}: the page is {over}px wider than a {w}px screen"
        self.width(WIDTHS[-1])
        if check:
            self.check()

    def check(self):
        """Every request went to 127.0.0.1 (or stayed in the page: data:, blob:), and no
        script failed."""
        for entry in self.d.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])
            elif msg.get("method") == "Network.responseReceived":
                r = msg["params"]["response"]
                self.responses.append((r["url"], r["status"]))
        for entry in self.d.get_log("browser"):
            m = entry.get("message", "")
            if entry.get("level") == "SEVERE" and ("Uncaught" in m or "SyntaxError" in m or "Refused to" in m):
                self.js_errors.append(m)
        outside = [u for u in self.requests if not local(u)]
        assert not outside, f"requests left 127.0.0.1: {outside}"
        assert not self.js_errors, f"script errors: {self.js_errors}"

    def close(self):
        try:
            self.check()
        finally:
            self.d.quit()
        log(f"{self.flow}: {len(self.requests)} requests, all to 127.0.0.1; {len(self.shots)} screenshots in {self.dir}")


def local(url):
    p = urllib.parse.urlsplit(url)
    if p.scheme in ("data", "blob", "about"):
        return True
    return p.scheme in ("http", "https", "ws", "wss") and p.hostname == "127.0.0.1"


def run(flow, steps):
    """Runs `steps(browser)`; on failure writes a last screenshot and exits non-zero."""
    b = Browser(flow)
    try:
        steps(b)
    except BaseException:
        try:
            b.shot("failure", check=False)
            log("page text at failure:\n" + b.text()[:4000])
        except Exception:
            pass
        b.d.quit()
        raise
    b.close()
    print(f"{flow}: passed", flush=True)
