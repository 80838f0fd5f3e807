export { embeddingLookupSparse } from './embedding_lookup_sparse';
export { embeddingLookupSparseGrad } from './embedding_lookup_sparse_grad';
export type { Combiner, EmbeddingLookupOptions } from './embedding_lookup_sparse';
export { relu, sigmoid, tanh } from '../graph/ops/elementwise';
