// The image has no curl: Node's fetch asks the process's /healthz on the port given as argument
// (the API's port, or a worker's or coordinator's --metrics-port).
const port = process.argv[2] || "8080";
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2500) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
