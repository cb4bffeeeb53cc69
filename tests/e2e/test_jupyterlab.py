"""A real JupyterLab in headless Chromium, on the kernelspec `pyrelune jupyter install
--sys-prefix` writes (JupyterLab's own kernel manager then loads pyrelune's provisioner):
a cell with a print, a plot and an ipywidgets slider shows all three on the page, and the
interrupt button stops a cell that ignores SIGINT, after which the next cell runs; the
debugger (bug icon, a breakpoint clicked in the gutter, the call stack and variables of the
stopped cell, continue) works on it; what
reaches the kernel through get_ipython() (IPython's shell) shows as under ipykernel: an
Output widget's capture, interact, plotly's and bokeh's figures, ipympl's canvas; and a
voila app on pyrelune's kernel follows its slider.

Needs Debian's `chromium` and `chromium-driver` (.ci/run installs them) and the test
extras (jupyterlab, selenium, ipywidgets); skipped, saying which is missing, without them.
Every wait is for a condition of the page, with a generous deadline: a busy machine is slow.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.launch import SCRIPT

#: A browser: the full run's (`--full`).
pytestmark = pytest.mark.long

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium "
                "chromium-driver; .ci/run installs them)", allow_module_level=True)
pytest.importorskip("jupyterlab", reason="needs JupyterLab (the test extras)")
pytest.importorskip("ipywidgets", reason="needs ipywidgets (the test extras)")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the test extras)")

from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT = 180.0  # a page condition on a busy 2-core machine
KERNEL = f"pyrelune-lab-{os.getpid()}"  # this environment's kernel folder is shared
FIRST = ("print('hello from pyrelune')\n"
         "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n"
         "import ipywidgets\nipywidgets.IntSlider(value=7, description='knob')")
STUBBORN = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('ignoring SIGINT', flush=True)\nwhile True:\n    time.sleep(0.1)")
AFTER = "print('the kernel goes on:', 6 * 7)"
#: The widgets.ipynb notebook: what reaches the kernel through get_ipython() (IPython's shell).
CAPTURED = ("import ipywidgets\nout = ipywidgets.Output()\ndisplay(out)\nwith out:\n"
            "    print('captured in the widget')\n"
            "    display(ipywidgets.HTML('<b>a widget in the widget</b>'))\n"
            "print('below the widget')")
INTERACT = ("from ipywidgets import interact\n"
            "shown = interact(lambda x: print(f'doubled {x * 2}'), x=(0, 20))")
UPDATED = "handle = display('first state', display_id=True)\nhandle.update('last state')"
#: The libraries.ipynb notebook: figures that libraries draw through the page's extensions.
PLOTLY = "import plotly.graph_objects as go\ngo.Figure(go.Bar(y=[2, 3, 1])).show()"
IPYMPL = ("%matplotlib widget\nimport matplotlib.pyplot as plt\n"
          "figure = plt.figure(figsize=(3, 2))\nplt.plot([1, 3, 2]);")
#: The debug.ipynb notebook: a breakpoint at line 2 stops it inside f.
DEBUGGED = "def f(a):\n    b = a * 2\n    return b\n\nprint('debugged', f(21))"
BOKEH = ("from bokeh.plotting import figure, output_notebook, show\n"
         "from bokeh.resources import INLINE\noutput_notebook(INLINE, hide_banner=True)\n"
         "p = figure(width=250, height=150)\np.line([1, 2, 3], [3, 1, 2])\nshow(p)")




@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server whose only extra kernel is pyrelune's; the notebook's URL."""
    root = tmp_path_factory.mktemp("lab")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    place = ["--sys-prefix", "--name", KERNEL]
    installed = subprocess.run([SCRIPT, "jupyter", "install", *place],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    try:
        yield from _served(root, notebooks)
    finally:
        subprocess.run([SCRIPT, "jupyter", "uninstall", *place], capture_output=True,
                       timeout=120, check=True)


def _served(root: Path, notebooks: Path) -> Iterator[str]:
    """JupyterLab serving `notebooks`, the check notebook written there; its URL."""
    for name, sources in (("check", (FIRST, STUBBORN, AFTER)),
                          ("widgets", (CAPTURED, INTERACT, UPDATED)),
                          ("libraries", (PLOTLY, IPYMPL, BOKEH)),
                          ("debug", (DEBUGGED,))):
        cells: list[dict[str, Any]] = [
            {"cell_type": "code", "source": source, "metadata": {}, "outputs": [],
             "execution_count": None, "id": f"cell-{n}"} for n, source in enumerate(sources)]
        (notebooks / f"{name}.ipynb").write_text(json.dumps({
            "cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": KERNEL, "display_name": "Python (pyrelune)",
                                        "language": "python"}}}))
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(
        # Port 0: the system picks a free one (no fixed port a parallel run could hold), which
        # the server then writes in its runtime folder's jpserver-<pid>.json.
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--port=0",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={notebooks}",
         f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate",
        *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI containers run as root
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=notebooks)
    info = root / "runtime" / f"jpserver-{server.pid}.json"
    try:
        deadline = time.monotonic() + WAIT
        port = None
        while port is None:
            try:
                port = json.loads(info.read_text())["port"]
            except (OSError, ValueError):  # not written yet, or half
                assert server.poll() is None, (root / "server.log").read_text()
                assert time.monotonic() < deadline, "JupyterLab did not say its port"
                time.sleep(0.2)  # polling for the server, not an assertion
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                assert server.poll() is None, (root / "server.log").read_text()
                assert time.monotonic() < deadline, "JupyterLab did not start"
                time.sleep(0.2)  # polling for the server, not an assertion
        with urllib.request.urlopen(f"{base}/api/kernelspecs?token={token}", timeout=30) as r:
            listed = json.loads(r.read())["kernelspecs"]
        metadata = listed[KERNEL]["spec"]["metadata"]  # listed: its provisioner was found
        assert metadata["kernel_provisioner"]["provisioner_name"] == "pyrelune-provisioner"
        yield f"{base}/lab/tree/check.ipynb?token={token}"
    finally:
        stop(server)
        log.close()


def stop(server: subprocess.Popen[bytes]) -> None:
    """End a server the test started: asked first, killed if it does not end."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # `get` returns once the document is parsed: each test then waits for what it needs to
    # see (`wait_for`). A page's full load also waits for every resource and stream it opens
    # (voila's page seen holding its load past the driver's 120 s), which no test looks at.
    options.page_load_strategy = "eager"
    # Pages name CDNs (voila's stylesheets): on a machine whose network drops packets
    # instead of refusing them, the page's load would wait for them until the driver's
    # time-out, so every name but the loopback's fails at once.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1400,1000",
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, "
                     "EXCLUDE 127.0.0.1"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: WebDriver, condition: Any, what: str) -> Any:
    """`condition(driver)` once it is truthy; fails saying `what` was not seen, and the page."""
    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.25,
                             ignored_exceptions=(WebDriverException,)).until(condition)
    except WebDriverException:
        outputs = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea")]
        prompts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".jp-InputPrompt")]
        status = [e.get_attribute("data-status") for e in driver.find_elements(
            By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")]
        raise AssertionError(f"not seen in {WAIT} s: {what}; outputs: {outputs}; prompts "
                             f"(unsent, running or run): {prompts}; kernel: {status}") from None


def cell(driver: WebDriver, index: int) -> Any:
    return driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell")[index]


def run_cell(driver: WebDriver, index: int) -> None:
    """Select the cell (command mode) and run it as a user does: Shift+Enter."""
    editor = cell(driver, index).find_element(By.CSS_SELECTOR, ".jp-InputArea-editor")
    editor.click()
    webdriver.ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(
        Keys.SHIFT).perform()


def run_cell_once_sent(driver: WebDriver, index: int) -> None:
    """`run_cell`, pressed again if the page did not send the cell (its prompt stayed `[ ]`).

    Right after a notebook opens, JupyterLab can take the keys before its kernel session is
    wired to the page; the cell then stays unsent, with nothing to wait for.
    """
    for _ in range(3):
        run_cell(driver, index)
        try:
            WebDriverWait(driver, 30, poll_frequency=0.25).until(
                lambda d: cell(d, index).find_element(
                    By.CSS_SELECTOR, ".jp-InputPrompt").text.strip() not in ("[ ]:", ""))
            return
        except WebDriverException:
            continue  # not sent: press again


def output_text(driver: WebDriver, index: int) -> str:
    return "\n".join(e.text for e in cell(driver, index).find_elements(
        By.CSS_SELECTOR, ".jp-OutputArea-output"))


def kernel_idle(driver: WebDriver) -> bool:
    status = driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")
    return bool(status) and status[0].get_attribute("data-status") == "idle"


def test_a_notebook_on_pyrelune_shows_text_a_plot_and_a_slider_and_interrupts(
        lab: str, browser: WebDriver) -> None:
    browser.get(lab)
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")) == 3,
             "the notebook's three cells")
    wait_for(browser, lambda d: "Python (pyrelune)" in d.find_element(
        By.CSS_SELECTOR, ".jp-KernelName").text, "the kernel named Python (pyrelune)")
    wait_for(browser, kernel_idle, "the kernel idle")

    run_cell(browser, 0)
    wait_for(browser, lambda d: "hello from pyrelune" in output_text(d, 0), "the printed text")
    image = wait_for(browser, lambda d: cell(d, 0).find_elements(
        By.CSS_SELECTOR, ".jp-RenderedImage img"), "the plot's image")
    assert image[0].get_attribute("src").startswith("data:image/png")
    wait_for(browser, lambda d: d.execute_script("return arguments[0].naturalWidth", image[0]),
             "the image decoded")
    slider = wait_for(browser, lambda d: cell(d, 0).find_elements(
        By.CSS_SELECTOR, ".widget-slider"), "the slider")
    assert "knob" in slider[0].text
    readout = slider[0].find_elements(By.CSS_SELECTOR, ".widget-readout")
    assert readout and readout[0].text.strip() == "7"
    wait_for(browser, kernel_idle, "the kernel idle after the first cell")

    run_cell(browser, 1)
    wait_for(browser, lambda d: "ignoring SIGINT" in output_text(d, 1), "the stubborn cell")
    button = browser.find_element(
        By.CSS_SELECTOR, "[data-command='notebook:interrupt-kernel']")
    button.click()
    wait_for(browser, lambda d: "KeyboardInterrupt" in output_text(d, 1)
             or "interrupt" in output_text(d, 1).lower().replace("ignoring sigint", ""),
             "the cell ended by the interrupt")
    wait_for(browser, kernel_idle, "the kernel idle after the interrupt")
    run_cell(browser, 2)
    wait_for(browser, lambda d: "the kernel goes on: 42" in output_text(d, 2),
             "the next cell's output")


def open_notebook(driver: WebDriver, lab: str, name: str, cells: int) -> None:
    """Open `name`.ipynb in a fresh workspace (`reset`: no other test's notebook beside it),
    once its `cells` cells show and its kernel is connected and idle."""
    driver.get(lab.replace("/check.ipynb", f"/{name}.ipynb") + "&reset")
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")) == cells,
             f"the notebook's {cells} cells")
    wait_for(driver, lambda d: "Python (pyrelune)" in d.find_element(
        By.CSS_SELECTOR, ".jp-KernelName").text, "the kernel named Python (pyrelune)")
    wait_for(driver, kernel_idle, "the kernel idle")


def widget_output(driver: WebDriver, index: int) -> str:
    """The text inside the cell's Output widgets (what they captured), not the cell's own."""
    return "\n".join(e.text for e in cell(driver, index).find_elements(
        By.CSS_SELECTOR, ".widget-output"))


def test_widgets_capture_what_the_cell_and_a_slider_show(lab: str, browser: WebDriver) -> None:
    """ipywidgets' Output and interact reach the kernel through get_ipython(): what they
    capture shows inside the widget, and moving interact's slider runs the function again."""
    open_notebook(browser, lab, "widgets", 3)

    run_cell_once_sent(browser, 0)
    wait_for(browser, lambda d: "below the widget" in output_text(d, 0), "the cell's own print")
    wait_for(browser, lambda d: "captured in the widget" in widget_output(d, 0)
             and "a widget in the widget" in widget_output(d, 0), "the Output widget's capture")
    assert "below the widget" not in widget_output(browser, 0)
    wait_for(browser, kernel_idle, "the kernel idle after the first cell")

    run_cell_once_sent(browser, 1)
    wait_for(browser, lambda d: "doubled 20" in widget_output(d, 1), "interact's first result")
    handle = wait_for(browser, lambda d: cell(d, 1).find_elements(
        By.CSS_SELECTOR, ".widget-slider .noUi-handle"), "interact's slider")
    wait_for(browser, kernel_idle, "the kernel idle after interact")
    handle[0].click()
    handle[0].send_keys(Keys.ARROW_RIGHT)
    wait_for(browser, lambda d: "doubled 22" in widget_output(d, 1),
             "interact's result after the slider moved")
    assert "doubled 20" not in widget_output(browser, 1)  # cleared, as interact clears

    run_cell_once_sent(browser, 2)
    wait_for(browser, lambda d: "last state" in output_text(d, 2), "the updated display")
    assert "first state" not in output_text(browser, 2)


def test_plotly_ipympl_and_bokeh_draw_their_figures_in_the_page(lab: str,
                                                                browser: WebDriver) -> None:
    """They find a notebook through get_ipython(): plotly's figure, ipympl's canvas and
    bokeh's figure (INLINE resources: no network) are drawn by their JupyterLab extensions,
    as under ipykernel."""
    for needed in ("plotly", "ipympl", "bokeh", "jupyter_bokeh"):
        pytest.importorskip(needed, reason=f"needs {needed} (the test extras)")
    open_notebook(browser, lab, "libraries", 3)

    run_cell_once_sent(browser, 0)
    wait_for(browser, lambda d: cell(d, 0).find_elements(By.CSS_SELECTOR, ".js-plotly-plot"),
             "plotly's figure")
    wait_for(browser, kernel_idle, "the kernel idle after plotly")

    run_cell_once_sent(browser, 1)
    wait_for(browser, lambda d: cell(d, 1).find_elements(
        By.CSS_SELECTOR, ".jupyter-matplotlib-figure canvas, .jupyter-matplotlib canvas"),
        "ipympl's canvas")
    wait_for(browser, kernel_idle, "the kernel idle after ipympl")

    run_cell_once_sent(browser, 2)
    # bokeh draws in shadow DOM, below the div its show() displays (jupyter_bokeh runs it).
    wait_for(browser, lambda d: d.execute_script(
        "const root = arguments[0].querySelector('[data-root-id]');"
        "return !!root && !!root.querySelector('*')", cell(d, 2)), "bokeh's figure")


def test_the_debugger_stops_a_cell_at_a_breakpoint_shows_its_frame_and_continues(
        lab: str, browser: WebDriver) -> None:
    """The bug icon turns the debugger on; a click in the cell's gutter sets a breakpoint;
    the cell run stops there: the call stack names f, the variables panel shows its `a`;
    the continue button ends the cell; run again, the interrupt button ends it."""
    open_notebook(browser, lab, "debug", 1)
    # (a toolbar button is a `jp-button` web component, or a plain button, in the wrapper
    # that carries the class; `disabled` until the kernel says it has a debugger)
    bug = wait_for(browser, lambda d: [b for b in d.find_elements(
        By.CSS_SELECTOR, ".jp-DebuggerBugButton jp-button, .jp-DebuggerBugButton button, "
        "jp-button.jp-DebuggerBugButton, button.jp-DebuggerBugButton")
        if b.get_attribute("disabled") in (None, "false") and b.is_displayed()],
        "the bug icon enabled (the kernel offers a debugger)")
    bug[0].click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-DebuggerBreakpoints"),
             "the debugger's panel")
    editor = cell(browser, 0)
    line = wait_for(browser, lambda d: editor.find_elements(By.CSS_SELECTOR, ".cm-line")[1],
                    "the cell's second line")

    def gutter_of_line(driver: WebDriver) -> Any:
        """The breakpoint gutter's element beside line 2 (the spacer is not shown)."""
        for element in editor.find_elements(
                By.CSS_SELECTOR, ".cm-gutter.cm-breakpoint-gutter .cm-gutterElement"):
            if element.is_displayed() and abs(element.location["y"] - line.location["y"]) < 4:
                return element
        return None

    wait_for(browser, gutter_of_line, "the breakpoint gutter beside line 2").click()
    wait_for(browser, lambda d: any(e.text.strip() == "2" for e in d.find_elements(
        By.CSS_SELECTOR, ".jp-DebuggerBreakpoint-line")), "the breakpoint listed at line 2")
    run_cell_once_sent(browser, 0)
    wait_for(browser, lambda d: any(e.text == "f" for e in d.find_elements(
        By.CSS_SELECTOR, ".jp-DebuggerCallstackFrame-name")), "the call stack stopped in f")
    wait_for(browser, lambda d: any(e.text.strip() == "a" for e in d.find_elements(
        By.CSS_SELECTOR, ".jp-DebuggerVariables-name")), "the frame's variable a")
    assert "debugged" not in output_text(browser, 0)  # stopped before its print
    wait_for(browser, lambda d: [b for b in d.find_elements(
        By.CSS_SELECTOR, "[data-command='debugger:continue']") if b.is_enabled()],
        "the continue button")[0].click()
    wait_for(browser, lambda d: "debugged 42" in output_text(d, 0), "the cell's end")
    wait_for(browser, kernel_idle, "the kernel idle after the debugged cell")

    # Stopped at the breakpoint again, the interrupt button ends the cell; the next runs.
    run_cell_once_sent(browser, 0)
    wait_for(browser, lambda d: any(e.text == "f" for e in d.find_elements(
        By.CSS_SELECTOR, ".jp-DebuggerCallstackFrame-name")), "stopped in f again")
    browser.find_element(By.CSS_SELECTOR, "[data-command='notebook:interrupt-kernel']").click()
    wait_for(browser, lambda d: "KeyboardInterrupt" in output_text(d, 0)
             or "interrupt" in output_text(d, 0).lower(), "the stopped cell interrupted")
    wait_for(browser, kernel_idle, "the kernel idle after the interrupt")
    assert "debugged 42" not in output_text(browser, 0)


#: The voila app: a slider and what `interactive_output` prints for it.
APP = ("import ipywidgets as w\nslider = w.IntSlider(value=3, description='n')\n"
       "def f(n):\n    print(f'squared {n * n}')\n"
       "out = w.interactive_output(f, {'n': slider})\ndisplay(slider, out)")


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """voila serving a one-cell app on pyrelune's kernel (a kernelspec of its own); its URL."""
    pytest.importorskip("voila", reason="needs voila (the test extras)")
    from support import jupyter_host

    root = tmp_path_factory.mktemp("voila")
    jupyter_host.kernelspec(root / "data", "message", name=f"{KERNEL}-voila")
    (root / "app.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": APP, "metadata": {}, "outputs": [],
                   "execution_count": None, "id": "app"}],
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": f"{KERNEL}-voila", "language": "python",
                                    "display_name": "Python (pyrelune)"}}}))
    env = {**os.environ, "JUPYTER_PATH": str(root / "data"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime"), "JUPYTER_CONFIG_DIR": str(root)}
    for _ in range(3):  # a port free a moment ago may be taken by then: another one
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log_path = root / f"voila-{port}.log"
        with log_path.open("wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "voila", str(root / "app.ipynb"), "--no-browser",
                 f"--port={port}", "--Voila.ip=127.0.0.1", "--Voila.port_retries=0"],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
            try:
                deadline = time.monotonic() + WAIT
                while server.poll() is None and time.monotonic() < deadline:
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                            break
                    except OSError:
                        time.sleep(0.2)  # polling for the server, not an assertion
                if server.poll() is None:
                    yield f"http://127.0.0.1:{port}/"
                    return
            finally:
                stop(server)
        if "already in use" not in log_path.read_text(errors="replace"):
            break
    raise AssertionError(f"voila did not start: {log_path.read_text(errors='replace')}")


def test_a_voila_app_follows_its_slider(voila: str, browser: WebDriver) -> None:
    """voila runs the notebook on pyrelune's kernel and keeps it for the page's widgets:
    interactive_output prints into its Output widget again as the slider moves."""
    # voila streams its page while it runs the notebook: one was seen holding even the
    # document's parse past the driver's 120 s on CI. The page's own wait ends a load
    # sooner, which is stopped and asked for again; what the test looks at is waited for.
    browser.set_page_load_timeout(60)
    for _attempt in range(2):
        try:
            browser.get(voila)
            break
        except TimeoutException:
            browser.execute_script("window.stop()")

    def body(driver: WebDriver) -> str:
        text: str = driver.find_element(By.TAG_NAME, "body").text
        return text

    wait_for(browser, lambda d: "squared 9" in body(d), "the app's first output")
    handle = wait_for(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, ".widget-slider .noUi-handle"), "the app's slider")
    handle[0].click()
    handle[0].send_keys(Keys.ARROW_RIGHT)
    wait_for(browser, lambda d: "squared 16" in body(d), "the output after the slider moved")
    assert "squared 9" not in body(browser)


def test_the_kernel_usage_panel_shows_the_kernels_figures(lab: str, browser: WebDriver) -> None:
    """jupyter-resource-usage's Kernel Usage panel asks the kernel (usage_request, on a
    control connection of its own) every few seconds: the page shows its host, its process,
    and its CPU and memory, never "Usage data is missing"."""
    pytest.importorskip("jupyter_resource_usage", reason="needs jupyter-resource-usage "
                        "(the test extras)")
    open_notebook(browser, lab, "check", 3)
    tab = wait_for(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, "li[data-id='kernelusage-panel-id']"), "the Kernel Usage tab")
    tab[0].click()

    def figures(driver: WebDriver) -> str | None:
        views = driver.find_elements(By.CSS_SELECTOR, ".jp-KernelUsage-view")
        text = views[0].text if views else ""
        return text if "Process ID:" in text and "Memory:" in text else None

    text = wait_for(browser, figures, "the panel's figures")
    assert "Kernel Host:" in text
    assert re.search(r"Process ID:\s*\d+", text), text
    assert re.search(r"CPU:\s*\d", text), text
    assert re.search(r"Memory:\s*\d", text), text
    assert not browser.find_elements(By.CSS_SELECTOR, ".jp-KernelUsage-timedOut")
