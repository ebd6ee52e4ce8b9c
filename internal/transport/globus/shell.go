package globus

import (
	"crypto/sha256"
	"encoding/hex"
)

// FunctionName is the name of the registered shell function.
const FunctionName = "mosaic_run"

// FunctionSource is the pure-Python function Mosaic registers: it runs an argument
// vector (no shell, like the SSH transport's quoted command line), feeds it stdin, and
// returns {returncode, stdout, stderr, truncated} with the streams base64-encoded so
// binary output survives JSONData. Output beyond max_output bytes is cut and flagged;
// a timeout gives returncode 124 as ShellFunction does (sdk/shell_function.py).
// Changing this text changes its hash, so a new function is registered.
const FunctionSource = `def mosaic_run(argv, stdin_b64, timeout_s, max_output):
    """Mosaic: run one command on the login node (argv, no shell)."""
    import base64
    import subprocess
    data = base64.b64decode(stdin_b64) if stdin_b64 else None
    try:
        p = subprocess.run(
            argv,
            input=data,
            stdin=None if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout_s if timeout_s and timeout_s > 0 else None,
        )
        rc, out, err = p.returncode, p.stdout or b"", p.stderr or b""
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or b"", e.stderr or b""
    except (FileNotFoundError, PermissionError) as e:
        rc, out, err = 127, b"", (str(e) + "\n").encode()
    truncated = len(out) + len(err) > max_output
    if truncated:
        out = out[:max_output]
        err = err[: max(0, max_output - len(out))]
    return {
        "returncode": rc,
        "stdout": base64.b64encode(out).decode(),
        "stderr": base64.b64encode(err).decode(),
        "encoding": "base64",
        "truncated": truncated,
    }
`

// FunctionCode is the function_code registered: pack_buffers([st-serialized source])
// (sdk/web_client.py FunctionRegistrationData).
func FunctionCode() string { return PackBuffers(PureSource(FunctionName, FunctionSource)) }

// FunctionHash identifies the registered code; one registration per hash.
func FunctionHash() string {
	h := sha256.Sum256([]byte(FunctionCode()))
	return hex.EncodeToString(h[:])
}
