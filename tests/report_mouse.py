#!/usr/bin/env python3
"""report_mouse.py: drives a `gpumemtrace report` page with the mouse in headless
Chromium (Selenium and chromedriver, offline) and checks that the view follows:

- a drag across a chart zooms to the times under its ends,
- a shift-drag pans by the distance dragged, keeping the width,
- the wheel zooms around the cursor (the time under it stays),
- a double-click shows everything again,
- each of them redraws every chart (the canvases' pixels change),
- hovering shows the readout; clicking an icicle frame zooms into it, its top bar back;

and that the page logged nothing to the console and asked the network for nothing.
The view is read from <body data-gmt-view="FROM-TO"> (seconds on the axis).

usage: report_mouse.py REPORT.html CHARTS
exit 0 when it holds, 1 (with the reason) when not, 77 without chromium, chromedriver
or the selenium package."""
import json
import os
import sys

import headless


def fail(msg):
    print("report_mouse: " + msg)
    sys.exit(1)


def skip(msg):
    print("report_mouse: " + msg)
    sys.exit(77)


try:
    from selenium import webdriver
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    skip("no selenium package here")


def browser():
    return headless.chrome("report_mouse", logs=True)


def view(d):
    a, b = d.find_element(By.TAG_NAME, "body").get_attribute("data-gmt-view").split("-")
    return float(a), float(b)


def pixels(d):
    return d.execute_script("return Array.from(document.querySelectorAll('.chart canvas'))"
                            ".map(function (c) { return c.toDataURL(); });")


def close(x, y, span, what):
    if abs(x - y) > span * 1e-6 + 1e-9:
        fail("%s: %.9f, expected %.9f" % (what, x, y))


def main():
    page, charts = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    d = browser()
    try:
        run(d, "file://" + page, charts)
    finally:
        d.quit()


def run(d, url, charts):
    d.get(url)
    try:
        WebDriverWait(d, 10).until(lambda x: x.find_element(By.TAG_NAME, "body").get_attribute("data-gmt-drawn"))
    except TimeoutException:
        log = d.get_log("browser")
        fail("the page did not mark itself drawn%s" % (": " + log[0]["message"] if log else ""))
    body = d.find_element(By.TAG_NAME, "body")
    if int(body.get_attribute("data-gmt-charts")) != charts:
        fail("%s charts, not %d" % (body.get_attribute("data-gmt-charts"), charts))
    cvs = d.find_elements(By.CSS_SELECTOR, ".chart canvas")
    cv = cvs[-1]  # the last chart: on a job's page, another rank's than the first
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", cv)
    left, right = (float(v) for v in cv.get_attribute("data-plot").split(","))
    w, h = cv.size["width"], cv.size["height"]
    pw = right - left
    # Selenium's offsets are from the element's centre; px(f) is the fraction f of the plot
    def px(f):
        return int(round(left + f * pw - w / 2))

    # where the browser says the mouse was: x in the canvas at each down, up and wheel
    d.execute_script("var cv = arguments[0]; window.gmtSeen = [];"
                     "['mousedown', 'mouseup', 'wheel'].forEach(function (k) {"
                     "  window.addEventListener(k, function (e) {"
                     "    window.gmtSeen.push([k, e.clientX - cv.getBoundingClientRect().left]); }, true); });", cv)

    def seen():
        got = {}
        for k, x in d.execute_script("var s = window.gmtSeen; window.gmtSeen = []; return s;"):
            got.setdefault(k, []).append(x)
        return got

    def at(x, v):
        return v[0] + (x - left) / pw * (v[1] - v[0])

    full = view(d)
    span = full[1] - full[0]
    shots = [pixels(d)]

    def changed(what):
        now = pixels(d)
        for i, (a, b) in enumerate(zip(shots[-1], now)):
            if a == b:
                fail("%s: chart %d was not redrawn" % (what, i))
        shots.append(now)

    # drag from 20% to 60% of the plot: the view becomes the times under its ends
    ActionChains(d).move_to_element_with_offset(cv, px(0.2), 0).click_and_hold() \
        .move_by_offset(px(0.4) - px(0.2), 0).move_by_offset(px(0.6) - px(0.4), 0).release().perform()
    ev = seen()
    z = view(d)
    close(z[0], at(ev["mousedown"][0], full), span, "drag-zoom's start")
    close(z[1], at(ev["mouseup"][0], full), span, "drag-zoom's end")
    if not 0.35 < (z[1] - z[0]) / span < 0.45:
        fail("drag-zoom over 40%% of the plot shows %.3f of the whole" % ((z[1] - z[0]) / span))
    changed("drag-zoom")

    # shift-drag 200 px to the right: the view moves 200 px earlier, as wide as before
    ActionChains(d).move_to_element_with_offset(cv, px(0.3), 0).key_down(Keys.SHIFT).click_and_hold() \
        .move_by_offset(100, 0).move_by_offset(100, 0).release().key_up(Keys.SHIFT).perform()
    ev = seen()
    p = view(d)
    dt = (ev["mouseup"][0] - ev["mousedown"][0]) / pw * (z[1] - z[0])
    if abs(ev["mouseup"][0] - ev["mousedown"][0] - 200) > 1:
        fail("the pan's drag went %.1f px, not 200" % (ev["mouseup"][0] - ev["mousedown"][0]))
    close(p[0], z[0] - dt, span, "pan's start")
    close(p[1], z[1] - dt, span, "pan's end")
    changed("shift-drag pan")

    # the wheel towards the page (deltaY < 0) zooms in by 0.8 around the cursor
    ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(cv, px(0.75), 0), 0, -100).perform()
    ev = seen()
    if len(ev.get("wheel", [])) != 1:
        fail("%d wheel events, not 1" % len(ev.get("wheel", [])))
    t = at(ev["wheel"][0], p)
    q = view(d)
    close(q[0], t - (t - p[0]) * 0.8, span, "wheel zoom's start")
    close(q[1], t + (p[1] - t) * 0.8, span, "wheel zoom's end")
    changed("wheel zoom")

    # hovering: the readout says what was live then
    ActionChains(d).move_to_element_with_offset(cv, px(0.5), 0).perform()
    ro = d.execute_script("var r = arguments[0].parentNode.querySelector('.readout');"
                          "return r.style.display === 'block' ? r.textContent : '';", cv)
    if "tracked" not in ro:
        fail("no readout on hover: %r" % ro)

    # a double-click shows everything
    ActionChains(d).double_click(cv).perform()
    r = view(d)
    close(r[0], full[0], span, "reset's start")
    close(r[1], full[1], span, "reset's end")
    changed("double-click reset")

    # an icicle: a click on a frame below the top zooms into it, a click on the top bar back
    ics = d.find_elements(By.CSS_SELECTOR, ".icicle canvas")
    if ics:
        ic = ics[-1]
        d.execute_script("arguments[0].scrollIntoView({block: 'center'});", ic)
        before = ic.screenshot_as_png
        iw, ih = ic.size["width"], ic.size["height"]
        if ih >= 36:
            ActionChains(d).move_to_element_with_offset(ic, -iw // 2 + 5, -ih // 2 + 27).click().perform()
            name = body.get_attribute("data-gmt-icicle")
            if not name:
                fail("a click on an icicle frame did not zoom into it")
            if ic.screenshot_as_png == before:
                fail("the icicle was not redrawn")
            iw, ih = ic.size["width"], ic.size["height"]  # it has fewer rows now
            ActionChains(d).move_to_element_with_offset(ic, -iw // 2 + 5, -ih // 2 + 9).click().perform()
            if body.get_attribute("data-gmt-icicle"):
                fail("a click on the icicle's top bar did not go back")

    asked = []
    for e in d.get_log("performance"):
        m = json.loads(e["message"])["message"]
        if m.get("method") == "Network.requestWillBeSent":
            u = m["params"]["request"]["url"]
            if u != url and not u.startswith("data:"):
                asked.append(u)
    if asked:
        fail("asked the network for %s" % asked[0])
    console = d.get_log("browser")
    if console:
        fail("console: %s" % console[0])
    print("report_mouse: %d chart(s); drag %.6g-%.6g, pan %.6g-%.6g, wheel %.6g-%.6g, reset %.6g-%.6g s%s" %
          (charts, z[0], z[1], p[0], p[1], q[0], q[1], r[0], r[1], ", icicle clicked" if ics else ""))


main()
