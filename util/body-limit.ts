/** Default request body cap: a review holds object and oldObject, each up to etcd's ~1.5 MiB, plus JSON overhead. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
