// The image has no curl: Node's fetch asks the process on the port given as first argument (the
// API's port, or a worker's or coordinator's --metrics-port) for the path given as second argument
// (the Dockerfile passes $AX_HEALTH_PATH): /healthz (default, the process answers) or /readyz
// (PostgreSQL and Redis answer too).
const port = process.argv[2] || "8080";
const path = process.argv[3] || "/healthz";
try {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2500) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
