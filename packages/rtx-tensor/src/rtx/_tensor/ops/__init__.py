"""The op families, one per file. Each op: a Primitive with forward and backward side by side,
and the public function that validates arguments and applies it."""
