"""What mmcomp adds to xDSL's IR: element types, source locations, typed isinstance checks,
the checked discardable attributes, and the registry of dialects, passes and targets."""
