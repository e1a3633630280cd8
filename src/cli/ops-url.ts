// Where the daemon that runs a configuration serves its operations endpoint: the commands that
// talk to a running relay (healthcheck, tap) find it from the same configuration file.

/** Its base URL ("http://127.0.0.1:9750"); undefined when metrics.enabled is false. */
export function opsBase(config: { readonly metrics: { readonly enabled: boolean; readonly address: string; readonly port: number } }): string | undefined {
  if (!config.metrics.enabled) return undefined;
  const { address, port } = config.metrics;
  // A server on every address answers on loopback: the command runs on the daemon's host (or in its container).
  const host = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '::1' : address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
