// The retriever and reader kinds, declared once: the configuration's enums, the libraries that
// open them, the server's backends, the CLI's help and the GraphQL enum (schema.graphql, held to
// this list by test/schema.test.ts) all read these lists, so a new kind is added here first.

/** The retrievers that search a store themselves, each with the backend it reads. */
export const RETRIEVER_BACKENDS = {
  'bm25-sqlite': 'sqlite',
  'bm25-es': 'elasticsearch',
  dense: 'sqlite',
  'dense-es': 'elasticsearch',
} as const satisfies Record<string, 'sqlite' | 'elasticsearch'>

export type BaseRetrieverKind = keyof typeof RETRIEVER_BACKENDS

/** What `hybrid` may fuse. A tuple, so that zod can make an enum of it. */
export const BASE_RETRIEVER_KINDS = ['bm25-sqlite', 'bm25-es', 'dense', 'dense-es'] as const satisfies readonly BaseRetrieverKind[]

/** Every retriever the configuration (`retriever`) and a request (`retriever:`) may name. */
export const RETRIEVER_KINDS = [...BASE_RETRIEVER_KINDS, 'hybrid'] as const

export type RetrieverKind = (typeof RETRIEVER_KINDS)[number]

/** The readers that give the answer set (`reader.kind`). */
export const READER_KINDS = ['spanseqgen', 'extractive'] as const

export type ReaderKind = (typeof READER_KINDS)[number]

/** Where the ONNX models run (reader.device, reranker.device, dense.device; core/onnx-session.ts). */
export const DEVICES = ['cpu', 'cuda', 'webgpu', 'auto'] as const

export type Device = (typeof DEVICES)[number]

/** A CLI option's help: the kinds it takes, and where its default comes from. */
export const RETRIEVER_CHOICES = `${RETRIEVER_KINDS.join(' | ')} (default: config "retriever")`

/** The GraphQL enum's name of a retriever kind: BM25_SQLITE is bm25-sqlite. */
export function retrieverEnumName(kind: RetrieverKind): string {
  return kind.toUpperCase().replace(/-/g, '_')
}
