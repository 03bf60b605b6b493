//! hip backend tests
