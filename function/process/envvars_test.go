package process

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"
)

// The variables Lambda sets but does not reserve keep the function's
// value: "The following additional environment variables aren't reserved
// and can be extended in your function configuration": LANG, PATH,
// LD_LIBRARY_PATH, NODE_PATH, PYTHONPATH (AWS Lambda developer guide,
// configuration-envvars.html). The function's value wins over Lambda's
// and over a layer's directories. So does TZ, which CreateFunction
// accepts (function.Config.Validate; TestConfigValidationFollowsTheLambdaAPIRanges)
// and which Lambda's runtimes honour (a function with TZ=Asia/Tokyo gets
// local times in JST). Before, runnel took all six and then silently
// replaced them with its own values.
func TestUnreservedEnvironmentVariablesKeepTheFunctionsValue(t *testing.T) {
	var layer bytes.Buffer
	zw := zip.NewWriter(&layer)
	w, _ := zw.Create("python/layered.py")
	w.Write([]byte("X = 1\n"))
	zw.Close()
	mine := map[string]string{"LANG": "C.UTF-8", "PATH": "/mine/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "/mine/lib",
		"PYTHONPATH": "/mine/python", "NODE_PATH": "/mine/node_modules", "TZ": "Asia/Tokyo"}
	src := "import os\ndef handler(e, c):\n    return {k: os.environ.get(k) for k in " +
		`["LANG", "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_PATH", "TZ"]}` + "\n"
	f, _ := managed(t, "python3.12", "app.handler", map[string]string{"app.py": src}, func(c *Config) {
		c.Environment = mine
		c.Layers = [][]byte{layer.Bytes()}
	})
	got := invokeJSON(t, f, "env-1", `{}`)
	for k, v := range mine {
		if got[k] != v {
			t.Errorf("%s = %v, want the function's %q", k, got[k], v)
		}
	}

	// Without the function's values, Lambda's (with the layer's
	// directories) are there.
	f2, _ := managed(t, "python3.12", "app.handler", map[string]string{"app.py": src}, func(c *Config) {
		c.Layers = [][]byte{layer.Bytes()}
	})
	got = invokeJSON(t, f2, "env-2", `{}`)
	if p, _ := got["PATH"].(string); !strings.HasSuffix(p, "/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin") || got["LANG"] != "en_US.UTF-8" || got["TZ"] != "UTC" {
		t.Errorf("defaults: %v", got)
	}
	if p, _ := got["PYTHONPATH"].(string); !strings.Contains(p, "/opt/python") {
		t.Errorf("PYTHONPATH with a layer: %q", p)
	}
}
