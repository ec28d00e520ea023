package process

import (
	"archive/zip"
	"bytes"
	"context"
	"strings"
	"testing"
)

// nodeLayer zips files (name → content) as a layer.
func nodeLayer(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A Node.js callback(err), context.succeed, context.done and context.fail
// answer at once, whatever keeps the event loop busy. AWS's Node.js
// runtime interface client (aws-lambda-nodejs-runtime-interface-client,
// src/CallbackContext.js) posts callback(err) at once and waits for an
// empty event loop (beforeExit) only for a successful callback while
// context.callbackWaitsForEmptyEventLoop is true; done/succeed/fail post
// directly and never wait. Before, all of them waited for beforeExit, so
// with a timer or a keep-alive socket open an error or a success became
// "Task timed out".
func TestANodeCallbackErrorAndContextSucceedAnswerAtOnce(t *testing.T) {
	files := map[string]string{
		"cb.js": `const hold = () => setTimeout(() => {}, 8000);
exports.err = (e, ctx, cb) => { hold(); cb(new Error("bad input")); };
exports.succeed = (e, ctx) => { hold(); ctx.succeed("ok"); };
exports.done = (e, ctx) => { hold(); ctx.done(null, { done: 1 }); };
exports.fail = (e, ctx) => { hold(); ctx.fail(new TypeError("failed")); };
exports.failBare = (e, ctx) => { hold(); ctx.fail(); };
exports.nowait = (e, ctx, cb) => { hold(); ctx.callbackWaitsForEmptyEventLoop = false; cb(null, "no wait"); };
exports.first = (e, ctx, cb) => { cb(new Error("first")); cb(null, "second"); ctx.succeed("third"); };
exports.wait = (e, ctx, cb) => { setTimeout(() => {}, 50); cb(null, "after the loop"); };`,
	}
	for _, c := range []struct{ handler, typ, msg, out string }{
		{"cb.err", "Error", "bad input", ""},
		{"cb.succeed", "", "", `"ok"`},
		{"cb.done", "", "", `{"done":1}`},
		{"cb.fail", "TypeError", "failed", ""},
		{"cb.failBare", "string", "handled", ""},
		{"cb.nowait", "", "", `"no wait"`},
		{"cb.first", "Error", "first", ""},
		{"cb.wait", "", "", `"after the loop"`},
	} {
		f, _ := managed(t, "nodejs20.x", c.handler, files, func(cfg *Config) { cfg.Timeout = 3 })
		if c.typ != "" {
			ie, payload := invokeError(t, f, `{}`)
			if ie.Type != c.typ || ie.Message != c.msg {
				t.Errorf("%s: %s: %s, want %s: %s (%v)", c.handler, ie.Type, ie.Message, c.typ, c.msg, payload)
			}
			continue
		}
		out, err := f.Invoke(context.Background(), []byte(`{}`))
		if err != nil || string(out) != c.out {
			t.Errorf("%s: %s, %v; want %s", c.handler, out, err, c.out)
		}
	}
}

// A Node.js function finds a layer's packages in nodejs/nodeNN/node_modules
// and nodejs/node_modules, by require and by ES module import. AWS
// (packaging-layers.html#packaging-layers-paths) lists nodejs/node_modules
// and nodejs/nodeNN/node_modules; the Node.js runtimes' NODE_PATH is
// /opt/nodejs/nodeNN/node_modules:/opt/nodejs/node_modules:
// /var/runtime/node_modules:/var/runtime:/var/task, and the Node.js 18+
// runtimes resolve an ES module's imports from layers too (AWS
// re:Post knowledge center, lambda-import-module-error-nodejs). Before,
// NODE_PATH was /opt/nodejs/node_modules only and an ES module's import
// of a layer package failed (Node's ES module resolver ignores NODE_PATH).
func TestANodeLayerPackageLoadsByRequireAndImport(t *testing.T) {
	layer := nodeLayer(t, map[string]string{
		"nodejs/node20/node_modules/versioned/package.json": `{"name":"versioned","main":"main.js"}`,
		"nodejs/node20/node_modules/versioned/main.js":      `module.exports = { v: "node20" };`,
		"nodejs/node_modules/shared/package.json":           `{"name":"shared","type":"module","exports":"./index.js"}`,
		"nodejs/node_modules/shared/index.js":               `export const s = "shared";`,
		"nodejs/node_modules/plain/index.js":                `module.exports = "plain";`,
	})
	files := map[string]string{
		"cjs.js": `const v = require("versioned"); const p = require("plain");
exports.handler = async () => ({ v: v.v, p, np: process.env.NODE_PATH });`,
		"esm.mjs": `import v from "versioned"; import { s } from "shared"; import p from "plain"; import * as path from "node:path";
export const handler = async () => ({ v: v.v, s, p, sep: path.sep });`,
	}
	f, _ := managed(t, "nodejs20.x", "cjs.handler", files, func(c *Config) { c.Layers = [][]byte{layer} })
	got := invokeJSON(t, f, "cjs", `{}`)
	if got["v"] != "node20" || got["p"] != "plain" {
		t.Errorf("require from the layer: %v", got)
	}
	np, _ := got["np"].(string)
	parts := strings.Split(np, ":")
	if len(parts) != 3 || !strings.HasSuffix(parts[0], "/nodejs/node20/node_modules") || !strings.HasSuffix(parts[1], "/nodejs/node_modules") || parts[2] != f.TaskRoot() {
		t.Errorf("NODE_PATH %q, want <opt>/nodejs/node20/node_modules:<opt>/nodejs/node_modules:<task root>", np)
	}
	f2, _ := managed(t, "nodejs20.x", "esm.handler", files, func(c *Config) { c.Layers = [][]byte{layer} })
	got = invokeJSON(t, f2, "esm", `{}`)
	if got["v"] != "node20" || got["s"] != "shared" || got["p"] != "plain" || got["sep"] != "/" {
		t.Errorf("import from the layer: %v", got)
	}
}

// A Node.js module that cannot load is reported as the RIC's
// UserFunction.js _loadUserApp does: a CommonJS MODULE_NOT_FOUND is
// Runtime.ImportModuleError with Node's own message, naming the missing
// module ("Error: Cannot find module 'axios'\nRequire stack:\n-
// /var/task/index.js..."); a SyntaxError is Runtime.UserCodeSyntaxError;
// anything else, an ES module's ERR_MODULE_NOT_FOUND included, is
// reported as thrown (errorType "Error", "Cannot find package 'x'
// imported from ..."). Before, every missing module was
// "Error: Cannot find module '<the handler's module>'".
func TestANodeImportModuleErrorNamesTheMissingModule(t *testing.T) {
	files := map[string]string{
		"index.js":  "const axios = require(\"axios\");\nexports.handler = async () => axios;",
		"esm.mjs":   "import axios from \"axios\";\nexport const handler = async () => axios;",
		"broken.js": `exports.handler = async () => { return 1 +; };`,
	}
	f, _ := managed(t, "nodejs20.x", "index.handler", files, nil)
	ie, _ := invokeError(t, f, `{}`)
	want := "Error: Cannot find module 'axios'\nRequire stack:\n- " + f.TaskRoot() + "/index.js"
	if ie.Type != "Runtime.ImportModuleError" || ie.Message != want {
		t.Errorf("require of a missing module: %s: %q, want Runtime.ImportModuleError: %q", ie.Type, ie.Message, want)
	}
	f, _ = managed(t, "nodejs20.x", "esm.handler", files, nil)
	ie, _ = invokeError(t, f, `{}`)
	if want := "Cannot find package 'axios' imported from " + f.TaskRoot() + "/esm.mjs"; ie.Type != "Error" || ie.Message != want {
		t.Errorf("import of a missing package: %s: %q, want Error: %q", ie.Type, ie.Message, want)
	}
	f, _ = managed(t, "nodejs20.x", "broken.handler", files, nil)
	ie, _ = invokeError(t, f, `{}`)
	if ie.Type != "Runtime.UserCodeSyntaxError" || !strings.HasPrefix(ie.Message, "SyntaxError: ") {
		t.Errorf("syntax error: %s: %q", ie.Type, ie.Message)
	}
}

// A Node.js unhandled promise rejection is the invocation's error with the
// RIC's shape (index.mjs, Errors.js UnhandledPromiseRejection): errorType
// "Runtime.UnhandledPromiseRejection", errorMessage String(reason)
// ("Error: bg boom"), logged as "Unhandled Promise Rejection". Before, the
// error was the bare reason (errorType "Error", errorMessage "bg boom").
func TestANodeUnhandledRejectionIsRuntimeUnhandledPromiseRejection(t *testing.T) {
	files := map[string]string{"bg.js": `exports.handler = async () => {
  Promise.reject(new Error("bg boom"));
  await new Promise((r) => setTimeout(r, 2000));
  return "late";
};`}
	f, sink := managed(t, "nodejs20.x", "bg.handler", files, nil)
	ie, payload := invokeError(t, f, `{}`)
	if ie.Type != "Runtime.UnhandledPromiseRejection" || ie.Message != "Error: bg boom" {
		t.Errorf("error %s: %q (%v), want Runtime.UnhandledPromiseRejection: \"Error: bg boom\"", ie.Type, ie.Message, payload)
	}
	found := false
	for _, m := range sink.messages("/aws/lambda/fn") {
		if strings.Contains(m, "\tERROR\tUnhandled Promise Rejection\t") && strings.Contains(m, `"errorType":"Runtime.UnhandledPromiseRejection"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no Unhandled Promise Rejection event in %q", sink.messages("/aws/lambda/fn"))
	}
}

// A Node.js async handler whose promise never settles ends, once the event
// loop is empty, with Runtime.NodeJsExit as the RIC of the nodejs20.x and
// nodejs22.x runtimes reports it (Runtime.js _setDefaultExitListener,
// Errors.js NodeJsExit; SPEC-streams-functions §6.3); a handler that is
// not an async function and never answers gets null. The environment
// stays. Before, the client exited and the invocation was
// Runtime.ExitError.
func TestANodeAsyncHandlerNeverSettlingIsNodeJsExit(t *testing.T) {
	files := map[string]string{"p.js": `exports.async = async () => { await new Promise(() => {}); };
exports.plain = () => new Promise(() => {});`}
	f, _ := managed(t, "nodejs20.x", "p.async", files, nil)
	for range 2 {
		ie, _ := invokeError(t, f, `{}`)
		if ie.Type != "Runtime.NodeJsExit" || !strings.HasPrefix(ie.Message, "The Lambda runtime client detected an unexpected Node.js exit code. This is most commonly caused by a Promise that was never settled.") {
			t.Errorf("error %s: %q, want Runtime.NodeJsExit", ie.Type, ie.Message)
		}
	}
	if st := f.Stats(); st.ColdStarts != 1 {
		t.Errorf("cold starts %d: NodeJsExit must not replace the environment", st.ColdStarts)
	}
	f, _ = managed(t, "nodejs20.x", "p.plain", files, nil)
	if out, err := f.Invoke(context.Background(), []byte(`{}`)); err != nil || string(out) != "null" {
		t.Errorf("a promise-returning plain function that never settles: %s, %v; want null", out, err)
	}
}
