//! AI providers (`aip_…`, ai-providers.yaml): a kind of upstream, where it is, the
//! model it serves by default, and the secret that holds its credential.
