//! The plans tests start servers with (TOML for `Options::config`), each once: a test
//! that needs another shape writes its own beside it and says why.

/// Room for anything a test does: no rate limit a test can reach, no search or storage cap.
pub const RAISED: &str = "[plans.scribe]\nrate_per_minute = 6000000\nburst = 100000\nsearch = \"unlimited\"\nstored_chars = \"unlimited\"\n";

/// The default plan with room for a test's requests (a few thousand a minute) and its
/// quotas as they are.
pub const ROOMY: &str = "[plans.scribe]\nrate_per_minute = 60000\nburst = 5000\n";

/// A plan every quota of which a test can reach: 100,000 stored characters (room for
/// the collections' records a test makes; stored characters count records too), one
/// search, one extraction and one research, a burst of 3.
pub const TINY: &str = "[auth]\ndefault_plan = \"tiny\"\n[plans.tiny]\nname = \"Tiny\"\nprice = 0\nstored_chars = 100000\nsearch = 1\nextract = 1\nresearch = 1\nrate_per_minute = 600\nburst = 3\n";

/// The model-calling tests' default plan: room to store and search, a hundred
/// extractions and research answers.
pub const LAB: &str = "[auth]\ndefault_plan = \"lab\"\n[plans.lab]\nname = \"Lab\"\nprice = 0\nstored_chars = 10000000\nsearch = 1000\nextract = 100\nresearch = 100\nrate_per_minute = 6000\nburst = 1000\n";
