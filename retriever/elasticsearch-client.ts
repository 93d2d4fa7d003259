// The Elasticsearch client as this project uses it: few retries and a short timeout so a down
// cluster fails fast with one clear error, and the next request works once it is back.
import { Client, errors } from '@elastic/elasticsearch'
import { AmbigqaError, ERR_ELASTICSEARCH_INDEX, ERR_ELASTICSEARCH_UNAVAILABLE } from '../core/errors.js'

export interface EsOptions {
  url: string
  index: string
  requestTimeoutMs?: number
  maxRetries?: number
}

export function createEsClient(options: EsOptions): Client {
  return new Client({
    node: options.url,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    maxRetries: options.maxRetries ?? 1,
    sniffOnStart: false,
  })
}

/** Turns a client failure into one AmbigqaError naming the URL, the cause and the fix. */
export function esError(err: unknown, options: EsOptions): AmbigqaError {
  if (err instanceof AmbigqaError) return err
  if (err instanceof errors.ConnectionError || err instanceof errors.TimeoutError || err instanceof errors.NoLivingConnectionsError) {
    return ERR_ELASTICSEARCH_UNAVAILABLE.withCause(err, options.url, err.message)
  }
  if (err instanceof errors.ResponseError) {
    const type = (err.body as { error?: { type?: string; reason?: string } } | undefined)?.error
    if (err.statusCode === 404 && type?.type === 'index_not_found_exception') {
      return ERR_ELASTICSEARCH_INDEX.withCause(err, options.url, options.index, 'does not exist', 'Build it with ambigqa index build --backend elasticsearch --es-url ' + options.url)
    }
    return ERR_ELASTICSEARCH_INDEX.withCause(err, options.url, options.index, `request failed with HTTP ${err.statusCode}: ${type?.reason ?? err.message}`, 'Check that the cluster is Elasticsearch 8.x with the english analyzer plugin (scripts/elasticsearch up installs it)')
  }
  return ERR_ELASTICSEARCH_UNAVAILABLE.withCause(err, options.url, err instanceof Error ? err.message : String(err))
}
