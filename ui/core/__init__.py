"""What several features share: the stream adapter, frames, the waiting line, input checks, settings, the mode
list and the renderers."""
