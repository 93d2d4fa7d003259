// The Host header check against DNS rebinding: a web page whose name is made to resolve to this
// server's address gets its requests answered only if the server answers for that name. The
// names answered: the loopback ones, the address it listens on, and server.allowedHosts; bound
// to every interface (0.0.0.0, ::), also this machine's name and interface addresses.
import { hostname, networkInterfaces } from 'node:os'

const LOOPBACK = ['localhost', '127.0.0.1', '::1']
const WILDCARD = ['0.0.0.0', '::', '']

export function allowedHostnames(listenHost: string | undefined, allowedHosts: readonly string[]): Set<string> {
  const names = new Set([...LOOPBACK, ...allowedHosts].map((h) => h.toLowerCase()))
  if (listenHost !== undefined && !WILDCARD.includes(listenHost)) names.add(listenHost.toLowerCase())
  if (listenHost !== undefined && WILDCARD.includes(listenHost)) {
    names.add(hostname().toLowerCase())
    for (const addresses of Object.values(networkInterfaces())) for (const a of addresses ?? []) names.add(a.address.toLowerCase())
  }
  return names
}

/** The host name of a Host header ('[::1]:4000' → '::1', 'Example.org.' → 'example.org'). */
export function hostnameOf(header: string): string {
  const trimmed = header.trim().toLowerCase()
  const name = trimmed.startsWith('[') ? trimmed.slice(1, trimmed.indexOf(']')) : trimmed.replace(/:\d+$/, '')
  return name.endsWith('.') ? name.slice(0, -1) : name
}
