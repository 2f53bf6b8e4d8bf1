"""headless.py: the headless Chromium of the report's Selenium tests (report_mouse.py,
report_layout.py): Debian's chromium and chromedriver, offline (any fetch at view time
fails instead of going out), one device pixel per CSS pixel, 1200 x 1000. A missing
browser or driver exits 77, which the suites count as a skip."""
import os
import shutil
import sys


def chrome(prog, logs=False):
    """A driver for the test named prog; logs: keep the console and performance logs."""
    from selenium import webdriver
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    drv = shutil.which("chromedriver") or ("/usr/lib/chromium/chromedriver"
                                           if os.path.exists("/usr/lib/chromium/chromedriver") else None)
    if not exe or not drv:
        print(prog + ": no chromium or chromedriver here")
        sys.exit(77)
    o = webdriver.ChromeOptions()
    o.binary_location = exe
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1200,1000",
              "--force-device-scale-factor=1",
              "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]:
        o.add_argument(a)
    if logs:
        o.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(options=o, service=webdriver.ChromeService(executable_path=drv))
