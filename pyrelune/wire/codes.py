"""Every error code the runtime gives, named once for the worker and all the codecs.

Plain strings, not an enum: the oneshot hot path imports this, and `enum`
costs more than the whole module. Each protocol renders them its own way.
"""

# How a cell failed: `CellError.code`.
PYTHON_SYNTAX_ERROR = "python_syntax_error"  # the cell does not compile
PYTHON_RUNTIME_ERROR = "python_runtime_error"  # the cell raised an exception
PYTHON_EXIT = "python_exit"  # the cell raised SystemExit
INTERRUPTED = "interrupted"  # KeyboardInterrupt ended the cell (the host interrupted it)
TIMEOUT = "timeout"  # the cell ran past its deadline and was killed
WORKER_DIED = "worker_died"  # the worker process ended, or broke the pipe protocol

# Why a request was refused before anything ran: `Rejected.code`. Vix Note
# gets it as is, rpc as its JSON-RPC number; lines has only the message.
INVALID_JSON = "invalid_json"  # not UTF-8, not JSON, or nested too deeply
INVALID_REQUEST = "invalid_request"  # JSON, but not a request the schema allows
UNKNOWN_METHOD = "unknown_method"  # a well-formed request of a type (method) not served
UNSUPPORTED_PROTOCOL = "unsupported_protocol"  # a request for another protocol (version)
INVALID_WORKING_DIRECTORY = "invalid_working_directory"  # the cell cannot run in that folder
INVALID_CONFIGURATION = "invalid_configuration"  # a setting (environment variable) is wrong
