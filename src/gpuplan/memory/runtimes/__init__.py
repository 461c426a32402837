"""One profile per stack: what each training stack or serving engine allocates (design.md, estimation layer)."""
