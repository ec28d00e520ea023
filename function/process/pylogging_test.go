package process

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pyLogging logs at init and in its handler through the logging module,
// on the root logger and a child, with and without setting the level.
const pyLogging = `import logging, os
logger = logging.getLogger()
if os.environ.get("SET_INFO"):
    logger.setLevel(logging.INFO)
logger.info("info at init")
def handler(event, context):
    logger.info("info %s", event["n"])
    logging.getLogger("child").warning("careful\nsecond line")
    logger.debug("debug %s", event["n"])
    return {}
`

// Python's logging reaches the function's log as the Lambda Python
// runtime writes it: awslambdaric installs a handler on the root logger
// (_setup_logging) whose format is
// "[LEVEL]\t<ISO 8601 UTC with ms>Z\t<request id>\t<message>" (SPEC
// §6.2; the request id "" at init), one log event per record. The root
// logger's level stays Python's WARNING unless the function sets it (as
// on AWS, where logger.setLevel(logging.INFO) is the documented idiom),
// or AWS_LAMBDA_LOG_LEVEL names one. Before, runnel's client installed
// no handler: logger.info never reached the log, and a warning came out
// bare (Python's last-resort handler, on stderr).
func TestPythonLoggingGoesToTheLogInLambdasFormat(t *testing.T) {
	ts := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`
	for _, c := range []struct {
		name       string
		env        map[string]string
		want, none []string
	}{
		{"level set by the function", map[string]string{"SET_INFO": "1"},
			[]string{`^\[INFO\]\t` + ts + `\t\tinfo at init$`, `^\[INFO\]\t` + ts + `\treq-1\tinfo 1$`, `^\[WARNING\]\t` + ts + `\treq-1\tcareful\rsecond line$`},
			[]string{`debug 1`}},
		{"default level WARNING", nil,
			[]string{`^\[WARNING\]\t` + ts + `\treq-1\tcareful\rsecond line$`},
			[]string{`info at init`, `info 1`, `debug 1`}},
		{"AWS_LAMBDA_LOG_LEVEL", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "TRACE"},
			[]string{`^\[INFO\]\t` + ts + `\t\tinfo at init$`, `^\[DEBUG\]\t` + ts + `\treq-1\tdebug 1$`},
			nil},
	} {
		f, sink := managed(t, "python3.12", "app.handler", map[string]string{"app.py": pyLogging}, func(cfg *Config) { cfg.Environment = c.env })
		invokeJSON(t, f, "req-1", `{"n":1}`)
		msgs := sink.messages("/aws/lambda/fn")
		for _, w := range c.want {
			if !slices.ContainsFunc(msgs, regexp.MustCompile(w).MatchString) {
				t.Errorf("%s: no event matches %q in:\n%s", c.name, w, strings.Join(msgs, "\n"))
			}
		}
		for _, n := range c.none {
			if slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, n) }) {
				t.Errorf("%s: %q logged:\n%s", c.name, n, strings.Join(msgs, "\n"))
			}
		}
	}
}
