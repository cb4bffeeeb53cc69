"""A small corpus of notebook cells, as data: what users bring from Jupyter.

Each notebook runs top to bottom in one kernel (ipykernel for the expected
outputs, then pyrelune's lines and rpc kernels); a cell marked `alone` needs
nothing from the cells before it, so it also runs as a oneshot request.
Every notebook starts in a fresh folder of its own. Cell names are unique:
the known differences (known.py) and the reports name cells by them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cell:
    name: str
    source: str
    alone: bool = True  # runs the same without the cells before it (oneshot runs it too)


@dataclass(frozen=True)
class Notebook:
    name: str
    cells: tuple[Cell, ...]


def notebook(name: str, *cells: Cell) -> Notebook:
    return Notebook(name, cells)


NUMPY = notebook(
    "numpy",
    Cell("np_array", "import numpy as np\nnp.arange(12).reshape(3, 4)"),
    Cell("np_linspace", "import numpy as np\nnp.linspace(0, 1, 5)"),
    Cell("np_print", "import numpy as np\nprint(np.eye(2))"),
    Cell("np_long", "import numpy as np\nnp.arange(2000)"),
    Cell("np_scalar", "import numpy as np\nnp.float64(1.5) * 2"),
    Cell("np_dtype", "import numpy as np\nnp.dtype('float32')"),
    Cell("np_warning", "import numpy as np\nnp.array([1.0]) / 0"),
    Cell("np_error", "import numpy as np\nnp.ones(3) @ np.ones(2)"),
)

PANDAS = notebook(
    "pandas",
    Cell("pd_frame", "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3.5, 4.5]})"),
    Cell("pd_series", "import pandas as pd\npd.Series([1, 2, 3], name='x')"),
    Cell("pd_describe", "import pandas as pd\n"
         "pd.DataFrame({'v': [1.0, 2.0, 4.0, 8.0]}).describe()"),
    Cell("pd_print", "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}))"),
    Cell("pd_long", "import pandas as pd\npd.DataFrame({'x': range(100)})"),
    Cell("pd_wide", "import numpy as np\nimport pandas as pd\n"
         "pd.DataFrame(np.arange(90).reshape(3, 30))"),
    Cell("pd_display_two", "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\n"
         "display(df)\ndisplay(df.T)"),
)

MATPLOTLIB = notebook(
    "matplotlib",
    Cell("mpl_inline", "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
         "plt.plot([1, 2, 3]);"),
    Cell("mpl_lines_result", "import matplotlib.pyplot as plt\nplt.plot([1, 2])"),
    Cell("mpl_show", "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 1])\nplt.show()\n"
         "print('after')"),
    Cell("mpl_closed", "import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.close(fig)\n"
         "print('closed')"),
    Cell("mpl_two", "import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1])\n"
         "plt.figure()\nplt.plot([2]);"),
)

SYMPY = notebook(
    "sympy",
    Cell("sp_expand", "import sympy as sp\nx = sp.symbols('x')\nsp.expand((x + 1)**3)"),
    Cell("sp_solve", "import sympy as sp\nx = sp.symbols('x')\nsp.solve(x**2 - 4, x)"),
    Cell("sp_matrix", "import sympy as sp\nsp.Matrix([[1, 2], [3, 4]])"),
    Cell("sp_print", "import sympy as sp\nprint(sp.sqrt(8))"),
    Cell("sp_init_printing", "import sympy as sp\nsp.init_printing()\nx = sp.symbols('x')\n"
         "sp.Integral(sp.sqrt(x), x)"),
)

_PNG = ("import base64\nfrom IPython.display import Image\n"
        "png = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
        "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==')\nImage(data=png)")

DISPLAY = notebook(
    "display",
    Cell("d_html", "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))"),
    Cell("d_markdown", "from IPython.display import Markdown\nMarkdown('# Title\\n*it*')"),
    Cell("d_latex", "from IPython.display import Latex\nLatex(r'$\\alpha + \\beta$')"),
    Cell("d_json", "from IPython.display import JSON\nJSON({'a': [1, 2]})"),
    Cell("d_svg", "from IPython.display import SVG\n"
         "SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>')"),
    Cell("d_png", _PNG),
    Cell("d_display_many", "display(1, 'two')\nprint('then')\n3"),
    Cell("d_display_id", "h = display('first', display_id=True)\nh.update('second')"),
    Cell("d_update_display", "from IPython.display import display, update_display\n"
         "display('a', display_id='k')\nupdate_display('b', display_id='k')"),
    Cell("d_clear_output", "from IPython.display import clear_output\nfor i in range(3):\n"
         "    clear_output(wait=True)\n    print(i)"),
    Cell("d_progressbar", "from IPython.display import ProgressBar\n"
         "for _ in ProgressBar(3):\n    pass"),
    Cell("d_repr_pretty", "class P:\n    def _repr_pretty_(self, p, cycle):\n"
         "        p.text('pretty!')\nP()"),
    Cell("d_ipython_display", "class D:\n    def _ipython_display_(self):\n"
         "        print('displayed by itself')\nD()"),
    Cell("d_repr_html_only", "class H:\n    def _repr_html_(self):\n"
         "        return '<i>html</i>'\nH()"),
    Cell("d_long_list", "list(range(60))"),
    Cell("d_dict", "{'b': 1, 'a': [1, 2], 'c': 'text'}"),
    Cell("d_semicolon", "1 + 1;"),
    Cell("d_none", "print('only this')\nNone"),
)

SEMANTICS = notebook(
    "semantics",
    Cell("s_pickle_function", "import pickle\ndef double(x):\n    return 2 * x\n"
         "pickle.loads(pickle.dumps(double))(21)"),
    Cell("s_pickle_instance", "import pickle\nclass Point:\n    def __init__(self, x):\n"
         "        self.x = x\npickle.loads(pickle.dumps(Point(3))).x"),
    Cell("s_main_module", "import __main__\n__main__.__dict__ is globals()"),
    Cell("s_help", "help(len)"),
    Cell("s_asyncio_run", "import asyncio\nasync def f():\n    return 5\nasyncio.run(f())"),
    Cell("s_top_level_await", "import asyncio\nawait asyncio.sleep(0)\n'awaited'"),
    Cell("s_tqdm_after_print", "from tqdm import tqdm\nfor i in tqdm(range(3)):\n    print(i)"),
    Cell("s_coroutine_warning", "async def f():\n    pass\nf()\nprint('called')"),
    Cell("s_exception", "def fail():\n    raise ValueError('bad value')\nfail()"),
    Cell("s_warn_define", "import warnings\ndef warn():\n    warnings.warn('careful')\nwarn()"),
    Cell("s_warn_again", "warn()", alone=False),
    Cell("s_task_start", "import asyncio\nticks = []\nasync def tick():\n    for i in range(3):\n"
         "        ticks.append(i)\n        await asyncio.sleep(0.01)\n"
         "task = asyncio.ensure_future(tick())\nawait asyncio.sleep(0)\nticks"),
    Cell("s_task_later", "await asyncio.sleep(0.5)\nticks", alone=False),
    Cell("s_beside_write", "with open('beside_mod.py', 'w') as f:\n    f.write('VALUE = 7\\n')"),
    Cell("s_beside_import", "import beside_mod\nbeside_mod.VALUE", alone=False),
    Cell("s_pool", "from multiprocessing import Pool\ndef square(x):\n    return x * x\n"
         "with Pool(2) as pool:\n    print(pool.map(square, [1, 2, 3]))"),
    Cell("s_displayhook", "import sys\nsys.displayhook = lambda value: print('hook:', value)\n5"),
)

# `_` in notebooks of their own: what earlier cells left in it would change the answers.
UNDERSCORE = notebook(
    "underscore",
    Cell("u_assign", "_ = 42"),
    Cell("u_result", "1 + 1", alone=False),
    Cell("u_kept", "_", alone=False),
)

GETTEXT = notebook(
    "gettext",
    Cell("g_install", "import gettext\ngettext.install('demo')\n_('hello')"),
    Cell("g_after_result", "2 + 2", alone=False),
    Cell("g_kept", "_('still the function')", alone=False),
)

MAGICS = notebook(
    "magics",
    Cell("m_matplotlib", "%matplotlib inline\nimport numpy as np\nprint('imported')"),
    Cell("m_after_matplotlib", "np.zeros(2)", alone=False),
    Cell("m_shell", "!echo hello from the shell"),
    Cell("m_shell_expand", "n = 3\n!echo {n * 2} $n"),
    Cell("m_shell_lines", "lines = !printf 'a\\nb\\n'\nlines"),
    Cell("m_shell_lines_attrs", "lines = !printf 'a\\nb\\n'\nprint(lines.s, lines.n, lines.l)"),
    Cell("m_time", "%time total = sum(range(1000))\nprint(total)"),
    Cell("m_time_cell", "%%time\nx = 6\nx * 7"),
    Cell("m_timeit", "%timeit -n 5 -r 2 sum(range(10))"),
    Cell("m_timeit_cell", "%%timeit -n 3 -r 2\nsum(range(10))"),
    Cell("m_pwd", "import os\nhere = %pwd\nhere == os.getcwd()"),
    Cell("m_cd", "import os\nos.mkdir('sub')\n%cd sub\nprint(os.path.basename(os.getcwd()))\n"
         "%cd -q ..\nos.path.basename(os.getcwd()) != 'sub'"),
    Cell("m_env", "%env CORPUS_VALUE=forty two\n%env CORPUS_VALUE"),
    Cell("m_pip", "%pip --version"),
    Cell("m_writefile", "%%writefile note.txt\nwritten by the cell"),
    Cell("m_writefile_read", "open('note.txt').read()", alone=False),
    Cell("m_capture", "%%capture kept\nprint('kept out')\ndisplay('kept display')"),
    Cell("m_capture_read", "print(repr(kept.stdout), len(kept.outputs))", alone=False),
    Cell("m_autoreload", "%load_ext autoreload\n%autoreload 2\nprint('ok')"),
    Cell("m_xmode", "%xmode Plain"),
    Cell("m_help_mark", "len?"),
    Cell("m_who_ls", "%who_ls", alone=False),
)

# What real notebooks do that IPython allows (issue 25's causes, one cell each).
PARITY = notebook(
    "parity",
    Cell("p_late_future", "x = 1\nfrom __future__ import division\nprint(x)"),
    Cell("p_prompts", ">>> y = 2\n>>> for i in range(y):\n...     print(i)"),
    Cell("p_ipython_prompts", "In [3]: z = 5\n\nIn [4]: z * 2"),
    Cell("p_bash", "%%bash\necho hi\necho err >&2\necho $((6 * 7))"),
    Cell("p_script", "%%script python3\nprint(6 * 7)"),
    Cell("p_shell_terminal", "!echo out; echo err >&2; "
         "python3 -c \"import sys; print(sys.stdout.isatty())\""),
    Cell("p_time", "%time sum(range(10))"),
    Cell("p_counter", "import collections\n"
         "collections.Counter({str(i) * 4: i for i in range(12)})"),
    Cell("p_function", "def f(x):\n    pass\nf"),
    Cell("p_file", "%%file mod1.py\nX = 1"),
    Cell("p_alias", "ls *.py", alone=False),
    Cell("p_capture_plot", "%%capture cap\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])"),
    Cell("p_capture_count", "len(cap.outputs)", alone=False),
    Cell("p_capture_show", "cap()", alone=False),
    Cell("p_savefig", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('a.png')"),
    Cell("p_empty_figure", "import matplotlib.pyplot as plt\nplt.figure()\nplt.show()"),
    Cell("p_html", "%%html\n<b>bold</b> text"),
    Cell("p_markdown", "%%markdown\n# A title"),
    Cell("p_run_write", "with open('script.py', 'w') as f:\n"
         "    f.write('import sys\\nprint(sys.argv[1:])\\nvalue = 5\\n')"),
    Cell("p_run", "%run script.py a b\nvalue", alone=False),
    Cell("p_who", "%who_ls int", alone=False),
)

NOTEBOOKS: tuple[Notebook, ...] = (
    NUMPY, PANDAS, MATPLOTLIB, SYMPY, DISPLAY, SEMANTICS, UNDERSCORE, GETTEXT, MAGICS, PARITY,
)


#: What only a Jupyter front end shows, or what reaches the kernel through `get_ipython()`:
#: run by nbclient on pyrelune's Jupyter kernel and ipykernel alone
#: (tests/e2e/test_corpus_nbclient.py), not in the other modes.
IPYTHON_SHELL = notebook(
    "ipython_shell",
    Cell("ip_kernel", "type(get_ipython()).__name__, get_ipython().kernel is not None"),
    Cell("ip_output_widget", "import ipywidgets\nout = ipywidgets.Output()\n"
         "with out:\n    print('inside the widget')\nprint('in the cell')\nout"),
    Cell("ip_interact", "from ipywidgets import interact\n"
         "shown = interact(lambda x: print(x * 2), x=5)"),
    Cell("ip_sympy_display", "import sympy as sp\nsp.init_printing()\nx = sp.symbols('x')\n"
         "display(sp.Eq(x**2, 4))"),
    Cell("ip_sympy_srepr", "sp.srepr(x)"),
    Cell("ip_figure_value", "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
         "fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 3, 2])\nfig"),
    Cell("ip_incomplete", "x = (1,\nprint("),
    Cell("ip_await", "import asyncio\nawait asyncio.sleep(0)\n'awaited'"),
    Cell("ip_update", "handle = display('first', display_id=True)\nhandle.update('last')"),
    Cell("ip_usage_error", "%no_such_magic"),
    Cell("ip_out_history", "Out[2] if 2 in Out else sorted(Out)[:1]"),
)

#: A tutorial's path through sympy's printing, as a notebook shows it once init_printing()
#: finds IPython's shell: LaTeX (and its PNG) for results and displays.
SYMPY_PRINTING = notebook(
    "sympy_printing",
    Cell("spp_init", "import sympy as sp\nsp.init_printing()\nx, y, z = sp.symbols('x y z')"),
    Cell("spp_expand", "sp.expand((x + y)**3)"),
    Cell("spp_factor", "sp.factor(x**3 - x**2 + x - 1)"),
    Cell("spp_integrate", "sp.integrate(sp.exp(x) * sp.sin(x) + sp.exp(x) * sp.cos(x), x)"),
    Cell("spp_limit", "sp.limit(sp.sin(x) / x, x, 0)"),
    Cell("spp_matrix", "sp.Matrix([[1, x], [y, 1]]).det()"),
    Cell("spp_display", "display(sp.Eq(sp.Integral(x**2, x), x**3 / 3))\nprint('after')"),
    Cell("spp_solveset", "sp.solveset(x**2 - 1, x)"),
    Cell("spp_latex", "print(sp.latex(sp.sqrt(x) / y))"),
    Cell("spp_tuple", "(x, sp.Rational(1, 3), 2.5)"),
)

#: IPython's rich output, as its documentation walks through it.
RICH_OUTPUT = notebook(
    "rich_output",
    Cell("ro_html", "from IPython.display import HTML\nHTML('<i>italic</i>')"),
    Cell("ro_markdown", "from IPython.display import Markdown\nMarkdown('**bold** and `code`')"),
    Cell("ro_math", "from IPython.display import Math\nMath(r'\\int_0^1 x\\,dx')"),
    Cell("ro_latex", "from IPython.display import Latex\nLatex(r'$\\alpha + \\beta$')"),
    Cell("ro_svg", "from IPython.display import SVG\n"
         "SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">"
         "<rect width=\"10\" height=\"10\"/></svg>')"),
    Cell("ro_json", "from IPython.display import JSON\nJSON({'a': [1, 2], 'b': None})"),
    Cell("ro_javascript", "from IPython.display import Javascript\nJavascript('var x = 1;')"),
    Cell("ro_several", "from IPython.display import display, HTML\n"
         "display(HTML('<b>one</b>'), HTML('<b>two</b>'))"),
    Cell("ro_clear", "from IPython.display import clear_output\nprint('gone')\n"
         "clear_output()\nprint('kept')"),
    Cell("ro_repr_html", "class Card:\n    def _repr_html_(self):\n"
         "        return '<div>card</div>'\nCard()"),
    Cell("ro_mimebundle", "class Both:\n    def _repr_mimebundle_(self, include=None, "
         "exclude=None):\n        return {'text/plain': 'both', 'text/markdown': '*both*'}\n"
         "Both()"),
    Cell("ro_capture", "%%capture captured\nprint('inside')\ndisplay(HTML('<p>kept</p>'))"),
    Cell("ro_captured", "captured.stdout, len(captured.outputs)"),
)

#: matplotlib's and pandas' plotting as their documentation's notebooks draw it inline.
PLOTTING = notebook(
    "plotting",
    Cell("pl_subplots", "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
         "fig, axes = plt.subplots(1, 2, figsize=(4, 2))\naxes[0].plot([1, 2, 3])\n"
         "axes[1].bar(['a', 'b'], [3, 1]);"),
    Cell("pl_two_figures", "plt.figure(figsize=(2, 2))\nplt.plot([3, 1])\n"
         "plt.figure(figsize=(2, 2))\nplt.plot([1, 3])\nplt.show()"),
    Cell("pl_returned", "fig, ax = plt.subplots(figsize=(2, 2))\nax.scatter([1, 2], [2, 1])"),
    Cell("pl_svg", "%config InlineBackend.figure_formats = ['svg']\n"
         "plt.figure(figsize=(2, 2))\nplt.plot([1, 2]);"),
    Cell("pl_png_again", "%config InlineBackend.figure_formats = ['png']\n"
         "plt.figure(figsize=(2, 2))\nplt.plot([2, 1]);"),
    Cell("pl_pandas", "import pandas as pd\n"
         "pd.DataFrame({'a': [1, 3, 2], 'b': [2, 1, 3]}).plot(figsize=(3, 2));"),
    Cell("pl_pandas_hist", "pd.Series([1, 1, 2, 3, 3, 3]).hist(figsize=(3, 2));"),
    Cell("pl_closed", "plt.figure()\nplt.close()\n'closed'"),
)

#: The notebooks only a Jupyter kernel runs (see IPYTHON_SHELL).
JUPYTER_NOTEBOOKS: tuple[Notebook, ...] = (IPYTHON_SHELL, SYMPY_PRINTING, RICH_OUTPUT, PLOTTING)


def cells(books: tuple[Notebook, ...] = NOTEBOOKS) -> list[tuple[Notebook, Cell]]:
    """Every cell of `books` with its notebook, in order."""
    return [(book, cell) for book in books for cell in book.cells]
