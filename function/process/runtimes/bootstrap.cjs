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

function logError(body) {
  // One log event: lines joined by \r, as Lambda writes it.
  const line = [new Date().toISOString(), requestId, "ERROR", "Invoke Error", JSON.stringify(body)].join("\t");
  fs.writeSync(1, line.replace(/\n/g, "\r") + "\n");
}

async function postError(p, err, type) {
  const body = errorBody(err);
  logError(body);
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

async function loadModule(base) {
  // As the RIC: extensionless, then .js (ESM under "type":"module"), .mjs, .cjs.
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
  return require(require.resolve(base, { paths: [ROOT] }));
}

async function loadHandler(handler) {
  if (handler.includes("..")) throw new FaultError("Runtime.MalformedHandlerName", "'" + handler + "' is not a valid handler name. Use absolute paths when specifying root directories in handler names.");
  const m = /^([^.]*?)\.(.*)$/.exec(path.basename(handler));
  if (!m) throw new FaultError("Runtime.MalformedHandlerName", "Bad handler " + handler);
  const [, mod, fnPath] = m;
  const base = path.resolve(ROOT, path.dirname(handler), mod);
  let module;
  try {
    module = await loadModule(base);
  } catch (e) {
    if (e instanceof SyntaxError) throw new FaultError("Runtime.UserCodeSyntaxError", e.name + ": " + e.message, e);
    if (e && (e.code === "MODULE_NOT_FOUND" || e.code === "ERR_MODULE_NOT_FOUND")) throw new FaultError("Runtime.ImportModuleError", "Error: Cannot find module '" + mod + "'", e);
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

// invoke runs the handler: a promise's settlement answers at once; a
// callback answers at once when callbackWaitsForEmptyEventLoop is false,
// else when the event loop is empty (beforeExit).
function invoke(fn, event, ctx) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (err, result) => {
      if (done) return;
      done = true;
      resolve({ err, result });
    };
    let called = null; // [err, result] once the callback was called
    const callback = (err, result) => {
      if (called) return;
      called = [err, result];
      if (!ctx.callbackWaitsForEmptyEventLoop) finish(err, result);
    };
    ctx.done = (err, result) => callback(err, result);
    ctx.succeed = (result) => callback(null, result);
    ctx.fail = (err) => callback(err || "handled");
    let ret;
    try {
      ret = fn(event, ctx, callback);
    } catch (e) {
      return finish(e);
    }
    if (ret && typeof ret.then === "function") ret.then((r) => finish(null, r), (e) => finish(e == null ? new Error("rejected") : e));
    // Otherwise the callback's outcome once the event loop is empty (a
    // handler that never called back: null).
    else process.once("beforeExit", () => (called ? finish(called[0], called[1]) : finish(null, null)));
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

async function main() {
  patchConsole();
  let fn;
  try {
    fn = await loadHandler(process.env._HANDLER || "");
  } catch (e) {
    await postError("/init/error", e);
    process.exit(1);
  }
  flushLogs(); // the init phase's output is logged before START
  let current = "";
  process.on("uncaughtException", async (e) => {
    if (current) await postError("/invocation/" + current + "/error", e, "Runtime.UncaughtException");
    process.exit(129);
  });
  process.on("unhandledRejection", async (e) => {
    if (current) await postError("/invocation/" + current + "/error", e, "Runtime.UnhandledPromiseRejection");
    process.exit(128);
  });
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
