// What the OTLP codec (runner/otlp/codec.ts) takes from @bufbuild/protobuf and the generated descriptors
// (runner/otlp/gen). In the runner bundle this is built on its own and embedded gzipped
// (esbuild.config.mjs, `__SVC_OTLP_PROTO__`), evaluated at the receiver's first request: at ~190 KB it was a
// fifth of the one file, which every command compiled and every daemon kept as source (docs/performance.md,
// "The idle daemon's memory").
export { create, fromBinary, fromJson, toBinary, toJson } from '@bufbuild/protobuf';
export { StatusSchema } from './gen/google/rpc/status_pb.ts';
export { ExportLogsServiceRequestSchema, ExportLogsServiceResponseSchema } from './gen/logs_service_pb.ts';
