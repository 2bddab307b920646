//! The command line: `quarry serve`, `quarry accounts …`, `quarry --version`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::Flags;

#[derive(Debug, Parser)]
#[command(name = "quarry", version, about = "Quarry: hybrid search, research and agents in one binary")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (until SIGTERM or SIGINT).
    Serve {
        #[command(flatten)]
        common: Common,
        /// Address to listen on, e.g. 127.0.0.1:4400 (port 0 picks a free one).
        #[arg(long)]
        listen: Option<String>,
        /// Shards (one per core, pinned); 0 or absent = every CPU this process may use.
        #[arg(long)]
        shards: Option<usize>,
    },
    /// Manage accounts (operators). Works on a stopped server's data directory.
    Accounts {
        #[command(subcommand)]
        action: AccountsAction,
    },
}

#[derive(Debug, Args)]
pub struct Common {
    /// A TOML configuration file (see ops/quarry.toml for every key).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The data directory.
    #[arg(long)]
    pub data: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AccountsAction {
    /// Create an account and print its first key (shown once).
    Create {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        email: String,
        /// The plan; default: auth.default_plan.
        #[arg(long)]
        plan: Option<String>,
    },
    /// Move an account to another plan.
    SetPlan {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        email: String,
        #[arg(long)]
        plan: String,
    },
    /// List every account.
    List {
        #[command(flatten)]
        common: Common,
    },
}

impl Common {
    pub fn flags(&self) -> Flags {
        Flags { data: self.data.clone(), ..Flags::default() }
    }
}
