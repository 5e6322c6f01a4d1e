#!/usr/bin/env python3
"""Times how long headless Chromium takes to render an HTML view (BENCHMARKS.md, issue 23).

Usage: benches/html_render.py PAGE.html [RUNS]

Drives Debian's chromium over the DevTools protocol on a pipe (no network, no extra packages):
opens the file, waits for its load event and reads the page's own Navigation Timing and paint
entries: time to first contentful paint, to the load event, and a forced full layout of the
whole document afterwards (what scrolling through all of it would cost). Best of RUNS (3).
"""
import json
import os
import subprocess
import sys
import tempfile


def session(page):
    profile = tempfile.mkdtemp(prefix="html-render-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # The protocol pipe is fds 3 (commands in) and 4 (replies out) in the browser.
    command = (f'exec 3<&{to_browser_r} 4>&{from_browser_w}; exec "$0" --headless --no-sandbox '
               '--disable-gpu --disable-background-networking --disable-component-update '
               f'--disable-sync --no-first-run --user-data-dir={profile} '
               '--remote-debugging-pipe --window-size=1280,1000 about:blank')
    browser = subprocess.Popen(
        ["bash", "-c", command, os.environ.get("CHROMIUM", "chromium")],
        pass_fds=(to_browser_r, from_browser_w),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_browser_r)
    os.close(from_browser_w)
    out = os.fdopen(to_browser_w, "wb")
    replies = os.fdopen(from_browser_r, "rb")
    buffered = b""
    counter = [0]

    def send(method, params=None, session_id=None):
        counter[0] += 1
        message = {"id": counter[0], "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        out.write(json.dumps(message).encode() + b"\0")
        out.flush()
        return counter[0]

    def receive(until):
        nonlocal buffered
        while True:
            while b"\0" not in buffered:
                chunk = replies.read1(65536)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                buffered += chunk
            raw, buffered = buffered.split(b"\0", 1)
            message = json.loads(raw)
            if until(message):
                return message

    created = send("Target.createTarget", {"url": "about:blank"})
    target_id = receive(lambda m: m.get("id") == created)["result"]["targetId"]
    attached = send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
    session_id = receive(lambda m: m.get("id") == attached)["result"]["sessionId"]
    enabled = send("Page.enable", session_id=session_id)
    receive(lambda m: m.get("id") == enabled)
    send("Page.navigate", {"url": "file://" + os.path.abspath(page)}, session_id)
    receive(lambda m: m.get("method") == "Page.loadEventFired")
    expression = """(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const paint = performance.getEntriesByName('first-contentful-paint')[0];
        const start = performance.now();
        for (const e of document.querySelectorAll('article, .host, .rules li'))
            e.style.contentVisibility = 'visible';
        document.body.getBoundingClientRect();
        const full = document.documentElement.scrollHeight;
        return {fcp: paint ? paint.startTime : null, load: nav.loadEventEnd,
                fullLayout: performance.now() - start, height: full,
                elements: document.getElementsByTagName('*').length};
    })()"""
    evaluated = send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                     session_id)
    result = receive(lambda m: m.get("id") == evaluated)["result"]["result"]["value"]
    send("Browser.close")
    browser.wait(timeout=60)
    return result


def main():
    page = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    results = [session(page) for _ in range(runs)]
    best = min(results, key=lambda r: r["load"])
    paint = "n/a" if best["fcp"] is None else f"{best['fcp']:.0f} ms"
    print(f"{page}: {os.path.getsize(page):,} bytes, {best['elements']:,} elements, "
          f"first contentful paint {paint}, load event {best['load']:.0f} ms, "
          f"then a full layout of everything {best['fullLayout']:.0f} ms (best of {runs})")


if __name__ == "__main__":
    main()
