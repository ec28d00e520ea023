// runnel's runtime client for nodejs* functions: the loop AWS's
// aws-lambda-nodejs-runtime-interface-client implements (load the handler,
// then GET next, call the handler, POST response or error), on the host's
// node. Shipped inside the runnel binary (function/process/managed.go) and
// run as `node bootstrap.cjs`; it needs nothing outside Node's own modules.
"use strict";
const http = require("http");
const fs = require("fs");
const path = require("path");
const util = require("util");
const { pathToFileURL } = require("url");

const FLUSH_MARK = process.env._RUNNEL_FLUSH_MARK || "";
delete process.env._RUNNEL_FLUSH_MARK;
const [HOST, PORT] = process.env.AWS_LAMBDA_RUNTIME_API.split(":");
const BASE = "/2018-06-01/runtime";
const ROOT = process.env.LAMBDA_TASK_ROOT || process.cwd();

function request(method, p, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port: PORT, method, path: BASE + p, headers: headers || {}, agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function flushLogs() {
  // Pipes are written synchronously on Linux: once written, the marker
  // tells runnel the output so far belongs to this invocation.
  if (FLUSH_MARK) {
    fs.writeSync(1, FLUSH_MARK + "\n");
    fs.writeSync(2, FLUSH_MARK + "\n");
  }
}

class FaultError extends Error {
  constructor(type, message, cause) {
    super(message);
    this.name = type;
    if (cause && cause.stack) this.stack = cause.stack;
  }
}

function errorBody(err) {
  if (err instanceof Error) {
    const trace = typeof err.stack === "string" ? err.stack.split("\n") : [];
    return { errorType: err.name || "Error", errorMessage: err.message, trace };
  }
  return { errorType: typeof err, errorMessage: String(err), trace: [] };
}

function logError(body, title) {
  // One log event: lines joined by \r, as Lambda writes it.
  const line = [new Date().toISOString(), requestId, "ERROR", title || "Invoke Error", JSON.stringify(body)].join("\t");
  fs.writeSync(1, line.replace(/\n/g, "\r") + "\n");
}

async function postError(p, err, type, title) {
  const body = errorBody(err);
  logError(body, title);
  flushLogs();
  await request("POST", p, JSON.stringify(body), { "Content-Type": "application/json", "Lambda-Runtime-Function-Error-Type": type || body.errorType });
}

function nearestType(dir) {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      return JSON.parse(fs.readFileSync(path.join(d, "package.json"), "utf8")).type;
    } catch (_) { /* none here */ }
    if (d === path.dirname(d) || d === path.dirname(ROOT)) return undefined;
  }
}

async function loadModule(base, mod, dir) {
  // As the RIC: extensionless, then .js (ESM under "type":"module"), .mjs,
  // .cjs; last, the module name as Node resolves it from the task root
  // and the handler's directory (a missing one: Node's MODULE_NOT_FOUND).
  const candidates = [
    [base, "require"],
    [base + ".js", nearestType(path.dirname(base)) === "module" ? "import" : "require"],
    [base + ".mjs", "import"],
    [base + ".cjs", "require"],
  ];
  for (const [file, how] of candidates) {
    if (!fs.existsSync(file) || fs.statSync(file).isDirectory()) continue;
    return how === "import" ? import(pathToFileURL(file).href) : require(file);
  }
  return require(require.resolve(mod, { paths: [ROOT, dir] }));
}

// withoutClient is Node's "Cannot find module" message without this
// client's own file in its "Require stack": on Lambda the stack ends in
// the runtime's /var/runtime/index.mjs, here in a temporary file that
// means nothing to the function's author.
function withoutClient(message) {
  const lines = String(message).split("\n").filter((l) => l !== "- " + __filename);
  if (lines[lines.length - 1] === "Require stack:") lines.pop();
  return lines.join("\n");
}

// loadHandler loads "[dir/]module.a.b" as the RIC's UserFunction.load:
// a SyntaxError is Runtime.UserCodeSyntaxError "SyntaxError: <message>";
// a CommonJS MODULE_NOT_FOUND (the handler's module or one it requires)
// is Runtime.ImportModuleError with Node's own message ("Error: Cannot
// find module 'axios'\nRequire stack:\n- <task>/index.js"); anything
// else, an ES module's ERR_MODULE_NOT_FOUND included ("Cannot find
// package 'x' imported from <task>/index.mjs", errorType "Error"), is
// reported as thrown, as the RIC rethrows it.
async function loadHandler(handler) {
  if (handler.includes("..")) throw new FaultError("Runtime.MalformedHandlerName", "'" + handler + "' is not a valid handler name. Use absolute paths when specifying root directories in handler names.");
  const m = /^([^.]*?)\.(.*)$/.exec(path.basename(handler));
  if (!m) throw new FaultError("Runtime.MalformedHandlerName", "Bad handler " + handler);
  const [, mod, fnPath] = m;
  const dir = path.resolve(ROOT, path.dirname(handler));
  let module;
  try {
    module = await loadModule(path.join(dir, mod), mod, dir);
  } catch (e) {
    if (e instanceof SyntaxError) throw new FaultError("Runtime.UserCodeSyntaxError", e.name + ": " + e.message, e);
    if (e && e.code === "MODULE_NOT_FOUND") throw new FaultError("Runtime.ImportModuleError", withoutClient(String(e)), e);
    throw e;
  }
  let fn = module;
  for (const part of fnPath.split(".")) fn = fn == null ? undefined : fn[part];
  if (fn === undefined) throw new FaultError("Runtime.HandlerNotFound", handler + " is undefined or not exported");
  if (typeof fn !== "function") throw new FaultError("Runtime.HandlerNotFound", handler + " is not a function");
  return fn;
}

function context(headers) {
  const deadline = Number(headers["lambda-runtime-deadline-ms"] || 0);
  const cc = headers["lambda-runtime-client-context"];
  const ci = headers["lambda-runtime-cognito-identity"];
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    invokedFunctionArn: headers["lambda-runtime-invoked-function-arn"],
    awsRequestId: headers["lambda-runtime-aws-request-id"],
    tenantId: headers["lambda-runtime-aws-tenant-id"],
    clientContext: cc ? JSON.parse(cc) : undefined,
    identity: ci ? JSON.parse(ci) : undefined,
    getRemainingTimeInMillis: () => Math.max(deadline - Date.now(), 0),
  };
}

// The one beforeExit action (the RIC's BeforeExitListener): Node emits
// beforeExit when the event loop is empty.
let onBeforeExit = null;
process.on("beforeExit", () => {
  const f = onBeforeExit;
  onBeforeExit = null;
  if (f) f();
});

// NodeJsExit is the RIC's Runtime.NodeJsExit: an async handler whose
// promise is still pending when the event loop is empty.
class NodeJsExit extends Error {
  constructor() {
    super("The Lambda runtime client detected an unexpected Node.js exit code. This is most commonly caused by a Promise that was never settled. For more information, see https://nodejs.org/docs/latest/api/process.html#exit-codes");
    this.name = "Runtime.NodeJsExit";
  }
}

// invoke runs the handler with the RIC's rules (CallbackContext.js,
// Runtime.js); the first of callback/done/succeed/fail/settlement wins:
//   - callback(err) answers the error at once; callback(null, result)
//     answers at once when context.callbackWaitsForEmptyEventLoop is
//     false, else when the event loop is empty (beforeExit);
//   - context.done(err, result), succeed(result), fail(err) answer at
//     once, never waiting (fail() without an error: "handled");
//   - a returned promise answers when it settles;
//   - nothing by the time the loop is empty: an async function handler
//     is Runtime.NodeJsExit, any other handler answers null. This is the
//     RIC of the nodejs20.x and nodejs22.x runtimes (3.x, Runtime.js
//     _setDefaultExitListener); older RICs answered null for both.
function invoke(fn, event, ctx) {
  return new Promise((resolve) => {
    let finished = false; // an outcome was chosen (possibly pending beforeExit)
    let answered = false;
    const answer = (err, result) => {
      if (answered) return;
      answered = true;
      onBeforeExit = null;
      resolve({ err, result });
    };
    const isAsync = fn.constructor && fn.constructor.name === "AsyncFunction";
    onBeforeExit = () => (isAsync ? answer(new NodeJsExit()) : answer(null, null));
    const once = (f) => (...args) => {
      if (finished) return;
      finished = true;
      f(...args);
    };
    const done = (err, result) => (err !== undefined && err !== null ? answer(err) : answer(null, result));
    const callback = once((err, result) => {
      if (err !== undefined && err !== null) return answer(err);
      if (!ctx.callbackWaitsForEmptyEventLoop) return answer(null, result);
      onBeforeExit = () => setImmediate(() => answer(null, result));
    });
    ctx.done = once(done);
    ctx.succeed = once((result) => done(null, result));
    ctx.fail = once((err) => done(err === undefined || err === null ? "handled" : err));
    let ret;
    try {
      ret = fn(event, ctx, callback);
    } catch (e) {
      return callback(e);
    }
    if (ret && typeof ret.then === "function") ret.then(ctx.succeed, ctx.fail);
  });
}

// As the Node.js runtime: console's lines are
// "<ISO time>\t<request id>\t<LEVEL>\t<message>", one log event each
// (a message's newlines become \r).
let requestId = "undefined";
function patchConsole() {
  for (const [method, level] of [["log", "INFO"], ["info", "INFO"], ["debug", "DEBUG"], ["warn", "WARN"], ["error", "ERROR"], ["trace", "TRACE"]]) {
    console[method] = (...args) => {
      const msg = util.format(...args).replace(/\n/g, "\r");
      fs.writeSync(1, [new Date().toISOString(), requestId, level, msg].join("\t") + "\n");
    };
  }
}

// UnhandledPromiseRejection is the RIC's Runtime.UnhandledPromiseRejection:
// its message is String(reason) ("Error: bg boom").
class UnhandledPromiseRejection extends Error {
  constructor(reason) {
    super(reason);
    this.name = "Runtime.UnhandledPromiseRejection";
  }
}

// ESM_HOOKS makes an ES module's bare import ("import axios from
// 'axios'") find packages in NODE_PATH's node_modules directories (the
// layers' /opt/nodejs/nodeNN/node_modules and /opt/nodejs/node_modules),
// as the Lambda Node.js 18+ runtimes do; Node's own ES module resolver
// ignores NODE_PATH. A specifier the function's own node_modules resolve
// is left alone; the hook only retries what Node could not find.
const ESM_HOOKS = `
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
let dirs = [];
export async function initialize(data) { dirs = data.dirs; }
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (e) {
    const bare = !/^[./#]/.test(specifier) && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(specifier);
    if (!e || e.code !== "ERR_MODULE_NOT_FOUND" || !bare) throw e;
    for (const d of dirs) {
      try {
        return await next(specifier, { ...context, parentURL: pathToFileURL(join(dirname(d), "runnel-layer.mjs")).href });
      } catch (_) { /* not in this one */ }
    }
    throw e;
  }
}`;

// registerLayerImports installs ESM_HOOKS when NODE_PATH names an
// existing node_modules directory. It needs module.register (Node.js
// 18.19+, 20.6+, 22, 24); on an older Node, ES modules cannot import from
// layers (CommonJS require still can).
function registerLayerImports() {
  const mod = require("module");
  const dirs = (process.env.NODE_PATH || "").split(path.delimiter)
    .filter((d) => path.basename(d) === "node_modules" && fs.existsSync(d));
  if (!dirs.length || typeof mod.register !== "function") return;
  mod.register("data:text/javascript," + encodeURIComponent(ESM_HOOKS), { parentURL: pathToFileURL(__filename).href, data: { dirs } });
}

async function main() {
  patchConsole();
  let current = "";
  let initializing = true;
  // As the RIC's index.mjs: logged, posted (as the init error before the
  // first invocation), then exit 129 / 128.
  const fatal = async (err, title, code) => {
    try {
      if (current) await postError("/invocation/" + current + "/error", err, undefined, title);
      else if (initializing) await postError("/init/error", err, undefined, title);
      else logError(errorBody(err), title);
    } finally {
      process.exit(code);
    }
  };
  process.on("uncaughtException", (e) => fatal(e, "Uncaught Exception", 129));
  process.on("unhandledRejection", (reason) => fatal(new UnhandledPromiseRejection(reason), "Unhandled Promise Rejection", 128));
  let fn;
  try {
    registerLayerImports();
    fn = await loadHandler(process.env._HANDLER || "");
  } catch (e) {
    await postError("/init/error", e);
    process.exit(1);
  }
  initializing = false;
  flushLogs(); // the init phase's output is logged before START
  for (;;) {
    const next = await request("GET", "/invocation/next");
    const h = next.headers;
    const id = h["lambda-runtime-aws-request-id"];
    current = id;
    requestId = id;
    if (h["lambda-runtime-trace-id"]) process.env._X_AMZN_TRACE_ID = h["lambda-runtime-trace-id"];
    let event;
    try {
      event = next.body.length ? JSON.parse(next.body.toString("utf8")) : {};
    } catch (e) {
      await postError("/invocation/" + id + "/error", new FaultError("Runtime.UnmarshalError", "Unable to parse input as JSON: " + e.message));
      continue;
    }
    const { err, result } = await invoke(fn, event, context(h));
    if (err !== null && err !== undefined) {
      await postError("/invocation/" + id + "/error", err);
      continue;
    }
    let out;
    try {
      out = result === undefined ? "null" : JSON.stringify(result);
    } catch (e) {
      await postError("/invocation/" + id + "/error", new FaultError("Runtime.MarshalError", "Unable to stringify response body: " + e.message));
      continue;
    }
    flushLogs();
    await request("POST", "/invocation/" + id + "/response", out, { "Content-Type": "application/json" });
    current = "";
  }
}

main();
