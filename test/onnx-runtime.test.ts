// onnxruntime-node 1.29+ starts Microsoft's telemetry with the first session, which leaves an
// empty mat-debug-<pid>.log and a .ses file in the temp folder of every process. Loading it
// through core/onnx-runtime.ts leaves nothing. Each run is a fresh process with its own TMPDIR.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import test from 'node:test'

const MODEL = resolve(process.cwd(), 'assets/models/reader/encoder_model_quantized.onnx')

/** What a process that makes one session through `module` leaves in its temp folder. */
function leftInTemp(module: string): string[] {
  const temp = mkdtempSync(resolve(tmpdir(), 'ort-temp-'))
  const script = `const { default: ort } = await import(${JSON.stringify(module)}); await ort.InferenceSession.create(${JSON.stringify(MODEL)})`
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp }
  delete env.ORT_DISABLE_TELEMETRY
  // The telemetry stays off where CI is set (as CI services set it), which would hide the control.
  delete env.CI
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', cwd: process.cwd() })
  assert.equal(run.status, 0, run.stderr)
  return readdirSync(temp)
}

test('a session made through core/onnx-runtime.ts leaves no mat-debug log or .ses file in the temp folder', () => {
  const raw = leftInTemp('onnxruntime-node')
  assert.ok(raw.some((f) => /^mat-debug-\d+\.log$/.test(f)), `onnxruntime-node alone left ${JSON.stringify(raw)}; if nothing, onnxruntime stopped writing it and core/onnx-runtime.ts may go`)
  assert.deepEqual(leftInTemp(pathToFileURL(resolve(process.cwd(), 'dist/core/onnx-runtime.js')).href), [])
})
