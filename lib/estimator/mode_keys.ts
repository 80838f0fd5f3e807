// tf.estimator.ModeKeys
export const ModeKeys = Object.freeze({ TRAIN: 'train', EVAL: 'eval', PREDICT: 'infer' } as const);
export type Mode = (typeof ModeKeys)[keyof typeof ModeKeys];
