# runnel's runtime client for python3.x functions: the loop AWS's
# awslambdaric implements (load the handler, then GET next, call the
# handler, POST response or error), on the host's interpreter. Shipped
# inside the runnel binary (function/process/managed.go) and run as
# `python3 bootstrap.py`; it needs nothing outside the standard library.
import decimal
import http.client
import importlib
import json
import logging
import os
import sys
import time
import traceback

FLUSH_MARK = os.environ.pop("_RUNNEL_FLUSH_MARK", "")
API = os.environ["AWS_LAMBDA_RUNTIME_API"]
BASE = "/2018-06-01/runtime"

# Output goes to pipes: line-buffer it so each line reaches the log at once.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)


def conn():
    host, port = API.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port))


def post(path, body, headers=None):
    c = conn()
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", BASE + path, body=body, headers=h)
    r = c.getresponse()
    r.read()
    c.close()


def flush_logs():
    # Everything printed so far belongs to this invocation: the marker
    # tells runnel the pipes are drained up to here (END comes after).
    if FLUSH_MARK:
        sys.stdout.write(FLUSH_MARK + "\n")
        sys.stdout.flush()
        sys.stderr.write(FLUSH_MARK + "\n")
        sys.stderr.flush()


# The request id of the invocation running (or last run): "" during init.
REQUEST_ID = ""


class LambdaLoggerHandler(logging.Handler):
    # As awslambdaric's: each record is one log event on stdout, here with
    # its newlines as \r (Lambda's telemetry frame keeps them in one event).
    def emit(self, record):
        try:
            msg = self.format(record)
            body = msg[:-1] if msg.endswith("\n") else msg
            sys.stdout.write(body.replace("\r\n", "\r").replace("\n", "\r") + "\n")
            sys.stdout.flush()
        except Exception:
            self.handleError(record)


class LambdaLoggerFilter(logging.Filter):
    def filter(self, record):
        record.aws_request_id = REQUEST_ID or ""
        return True


def setup_logging():
    # awslambdaric's _setup_logging (text format): a handler on the root
    # logger writing "[LEVEL]\t<ISO8601 UTC>.<ms>Z\t<request id>\t<msg>".
    # The root logger's level stays Python's WARNING unless the function
    # sets it, or AWS_LAMBDA_LOG_LEVEL names one (TRACE is DEBUG).
    logging.Formatter.converter = time.gmtime
    handler = LambdaLoggerHandler()
    handler.setFormatter(logging.Formatter(
        "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s\n", "%Y-%m-%dT%H:%M:%S"))
    handler.addFilter(LambdaLoggerFilter())
    level = os.environ.get("AWS_LAMBDA_LOG_LEVEL")
    level = {None: "", "TRACE": "DEBUG"}.get(level, level).upper()
    root = logging.getLogger()
    if level in logging._nameToLevel:
        root.setLevel(level)
    root.addHandler(handler)


class FaultError(Exception):
    def __init__(self, typ, msg, tb=None):
        super().__init__(msg)
        self.typ, self.msg, self.tb = typ, msg, tb


def frames(tb):
    # The stack as awslambdaric reports it: the user's frames, not ours.
    out = [f for f in traceback.extract_tb(tb) if f.filename != __file__]
    return traceback.format_list(out)


def error_body(typ, msg, request_id, stack):
    return {"errorMessage": msg, "errorType": typ, "requestId": request_id, "stackTrace": stack}


def log_error(body):
    # One log event: lines joined by \r, indentation as U+00A0, as Lambda.
    lines = ["[ERROR] %s: %s" % (body["errorType"], body["errorMessage"])]
    if body["stackTrace"]:
        lines.append("Traceback (most recent call last):")
        for f in body["stackTrace"]:
            for ln in f.rstrip("\n").split("\n"):
                stripped = ln.lstrip(" ")
                lines.append("\u00a0" * (len(ln) - len(stripped)) + stripped)
    sys.stdout.write("\r".join(lines) + "\n")
    sys.stdout.flush()


def load(handler):
    try:
        modname, fname = handler.rsplit(".", 1)
    except ValueError as e:
        raise FaultError("Runtime.MalformedHandlerName", "Bad handler '%s': %s" % (handler, e))
    modname = modname.replace("/", ".")
    if modname in sys.builtin_module_names:
        raise FaultError("Runtime.BuiltInModuleConflict", "Cannot use built-in module %s as a handler module" % modname)
    try:
        mod = importlib.import_module(modname)
    except ImportError as e:
        raise FaultError("Runtime.ImportModuleError", "Unable to import module '%s': %s" % (modname, e))
    except SyntaxError as e:
        raise FaultError("Runtime.UserCodeSyntaxError", "Syntax error in module '%s': %s" % (modname, e), e.__traceback__)
    except Exception as e:
        raise FaultError(type(e).__name__, str(e), e.__traceback__)
    fn = getattr(mod, fname, None)
    if fn is None:
        raise FaultError("Runtime.HandlerNotFound", "Handler '%s' missing on module '%s'" % (fname, modname))
    return fn


class ClientContext:
    __slots__ = ["custom", "env", "client"]


class Client:
    __slots__ = ["installation_id", "app_title", "app_version_name", "app_version_code", "app_package_name"]


class CognitoIdentity:
    __slots__ = ["cognito_identity_id", "cognito_identity_pool_id"]

    def __init__(self):
        self.cognito_identity_id = None
        self.cognito_identity_pool_id = None


def _from_dict(cls, d):
    o = cls()
    for name in cls.__slots__:
        setattr(o, name, d.get(name) if isinstance(d, dict) else None)
    return o


class Context:
    def __init__(self, headers):
        self.aws_request_id = headers.get("Lambda-Runtime-Aws-Request-Id", "")
        self.invoked_function_arn = headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
        self._deadline = int(headers.get("Lambda-Runtime-Deadline-Ms", "0") or 0)
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.tenant_id = headers.get("Lambda-Runtime-Aws-Tenant-Id")
        # As the AWS Python runtime gives them: objects with attributes
        # (context.client_context.custom, context.identity.cognito_identity_id),
        # the client context None when the invoke had none.
        cc = headers.get("Lambda-Runtime-Client-Context")
        self.client_context = None
        if cc:
            d = json.loads(cc)
            self.client_context = _from_dict(ClientContext, d)
            if self.client_context.client is not None:
                self.client_context.client = _from_dict(Client, self.client_context.client)
        ci = headers.get("Lambda-Runtime-Cognito-Identity")
        self.identity = CognitoIdentity()
        if ci:
            d = json.loads(ci)
            self.identity.cognito_identity_id = d.get("cognitoIdentityId")
            self.identity.cognito_identity_pool_id = d.get("cognitoIdentityPoolId")

    def get_remaining_time_in_millis(self):
        return max(self._deadline - int(time.time() * 1000), 0)


def to_json(o):
    if isinstance(o, decimal.Decimal):
        return int(o) if o == o.to_integral_value() else float(o)
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


def endpoint_for_old_botocore(force=False):
    # botocore reads AWS_ENDPOINT_URL from 1.31 on; an older one (the
    # host's, e.g. Debian 12's 1.29) is given it at create_client so that
    # the function's boto3 calls reach runnel as they would with a newer.
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return
    try:
        from importlib.metadata import version
        major, minor = (int(x) for x in version("botocore").split(".")[:2])
    except Exception:
        return  # no botocore
    if (major, minor) >= (1, 31) and not force:
        return
    import botocore.session
    create_client = botocore.session.Session.create_client

    def with_endpoint(self, *args, **kwargs):
        if len(args) < 6 and kwargs.get("endpoint_url") is None:
            kwargs["endpoint_url"] = url
        return create_client(self, *args, **kwargs)

    botocore.session.Session.create_client = with_endpoint


def main():
    global REQUEST_ID
    setup_logging()
    sys.path.insert(0, os.environ.get("LAMBDA_TASK_ROOT", "."))
    endpoint_for_old_botocore()
    try:
        fn = load(os.environ.get("_HANDLER", ""))
    except FaultError as e:
        body = error_body(e.typ, e.msg, "", frames(e.tb) if e.tb else [])
        log_error(body)
        post("/init/error", json.dumps(body), {"Lambda-Runtime-Function-Error-Type": e.typ})
        sys.exit(1)
    flush_logs()  # the init phase's output is logged before START
    while True:
        c = conn()
        c.request("GET", BASE + "/invocation/next")
        r = c.getresponse()
        raw = r.read()
        headers = {k: v for k, v in r.getheaders()}
        c.close()
        ctx = Context(headers)
        rid = ctx.aws_request_id
        REQUEST_ID = rid
        if "Lambda-Runtime-Trace-Id" in headers:
            os.environ["_X_AMZN_TRACE_ID"] = headers["Lambda-Runtime-Trace-Id"]
        try:
            try:
                ctype = headers.get("Content-Type", "application/json")
                event = json.loads(raw) if ctype.startswith("application/json") and raw else raw
            except Exception as e:
                raise FaultError("Runtime.UnmarshalError", "Unable to unmarshal input: %s" % e)
            result = fn(event, ctx)
            if isinstance(result, (bytes, bytearray)):
                out, ctype = bytes(result), "application/unknown"
            else:
                try:
                    out, ctype = json.dumps(result, default=to_json), "application/json"
                except Exception as e:
                    raise FaultError("Runtime.MarshalError", "Unable to marshal response: %s" % e)
        except FaultError as e:
            body = error_body(e.typ, e.msg, rid, [])
            log_error(body)
            flush_logs()
            post("/invocation/%s/error" % rid, json.dumps(body), {"Lambda-Runtime-Function-Error-Type": e.typ})
            continue
        except Exception as e:
            body = error_body(type(e).__name__, str(e), rid, frames(e.__traceback__))
            log_error(body)
            flush_logs()
            post("/invocation/%s/error" % rid, json.dumps(body), {"Lambda-Runtime-Function-Error-Type": "Unhandled"})
            continue
        flush_logs()
        post("/invocation/%s/response" % rid, out, {"Content-Type": ctype})


if __name__ == "__main__":
    main()
