// Every graph op, registered by importing its file: the compiler imports this, so an op
// defined in lib/graph/ops/ is known wherever a graph is compiled. A new op is one file
// here and one line below.
import './sources';
import './elementwise';
import './dense_activation';
import './array';
import './linalg';
import './losses';
import './interaction';
import './prune_ids';
import './unique';
import './gather_rows';
import './segment_combine';
import './partition_by_owner';
import './restore_order';
import './exchange';
import './coalesce';
import './cast';
import './embedding_lookup';
import './lookup_backward_apply';
import './apply_gradients';
import './assert_finite';
import './metric_accumulate';
