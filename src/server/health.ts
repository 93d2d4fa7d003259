// What the server depends on, each with its state: `health` and the load balancer's
// /health/ready say not ready when a required one is down, instead of a constant "ok".
import type { Pipeline } from '../pipeline/pipeline.js'
import type { PassageSource } from '../../retriever/passage-source.js'
import { describeModelDevices } from '../../core/model-devices.js'

export interface DependencyProbe {
  name: string
  required: boolean
  /** Resolves with a detail when up ("5531 passages"); throws, with the reason, when down. */
  check(): Promise<string>
}

export interface DependencyReport { name: string; required: boolean; state: 'UP' | 'DOWN'; detail: string }
export interface HealthReport { ok: boolean; dependencies: DependencyReport[] }

export async function checkHealth(probes: readonly DependencyProbe[]): Promise<HealthReport> {
  const dependencies = await Promise.all(probes.map(async (p): Promise<DependencyReport> => {
    try {
      return { name: p.name, required: p.required, state: 'UP', detail: await p.check() }
    } catch (err) {
      const code = (err as { code?: unknown }).code
      return { name: p.name, required: p.required, state: 'DOWN', detail: `${typeof code === 'string' && code.startsWith('AMBIGQA_ERR_') ? `${code}: ` : ''}${(err as Error).message}` }
    }
  }))
  return { ok: dependencies.every((d) => d.state === 'UP' || !d.required), dependencies }
}

/**
 * The passages (store or Elasticsearch index) and the reader models, both required: `ask` is what
 * the server is for. The reader's detail says where each model runs (the CPU, or the GPU asked for).
 */
export function standardProbes(passages: PassageSource, pipeline: Pipeline): DependencyProbe[] {
  return [
    { name: passages.kind, required: true, check: async () => `${passages.name}: ${await passages.count()} passages` },
    {
      name: 'reader', required: true,
      check: async () => {
        if (!pipeline.readerAvailable) throw new Error(pipeline.stages.readerProblem ?? 'no reader was configured')
        const devices = describeModelDevices()
        return devices ? `loaded; ${devices}` : 'loaded'
      },
    },
  ]
}
