//! Foundation: diff engine, configuration, state, hooks, demo.
