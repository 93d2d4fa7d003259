// onnxruntime-node, as every model of the project loads it. Since 1.29 the official builds
// start Microsoft's 1DS telemetry with the first session: it leaves an empty
// mat-debug-<pid>.log and a .ses file in the temp folder of every process, keeps a device id
// under ~/.cache/Microsoft/DeveloperTools, and uploads usage events. ORT_DISABLE_TELEMETRY=1,
// read when the first session is made, turns all of it off; an operator who wants it sets
// ORT_DISABLE_TELEMETRY=0.
import ort from 'onnxruntime-node'

process.env.ORT_DISABLE_TELEMETRY ??= '1'

export default ort
