//! `quarry`: parse the command line, resolve the configuration, run.

use anyhow::{Context, Result};
use clap::Parser;
use quarry::cli::{AccountsAction, Cli, Command, Common};
use quarry::config::{Config, Flags};
use quarry::store::Records;
use quarry::{identity, shard, telemetry};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Serve { common, listen, shards } => {
            let flags = Flags { listen, shards, ..common.flags() };
            let config = load(&common, &flags)?;
            telemetry::init(&config.log);
            shard::run(config).context("quarry serve")
        }
        Command::Accounts { action } => accounts(action),
    }
}

fn load(common: &Common, flags: &Flags) -> Result<Config> {
    Config::load(common.config.as_deref(), std::env::vars(), flags).context("configuration")
}

/// What an `accounts` subcommand does with the store and the configuration.
type AccountsRun<'a> = &'a dyn Fn(&Records, &Config) -> Result<()>;

fn accounts(action: AccountsAction) -> Result<()> {
    let (common, run): (&Common, AccountsRun) = match &action {
        AccountsAction::Create { common, email, plan } => (common, &move |records, config| {
            let plan = plan.as_deref().unwrap_or(&config.auth.default_plan);
            let done = identity::create_account(records, &config.plans, email, plan)?;
            println!("account {} ({}) on plan {}", done.account.id, done.account.email, done.account.plan);
            println!("api key (shown once): {}", done.key.secret);
            Ok(())
        }),
        AccountsAction::SetPlan { common, email, plan } => (common, &move |records, config| {
            let a = identity::set_plan(records, &config.plans, email, plan)?;
            println!("account {} ({}) is now on plan {}", a.id, a.email, a.plan);
            Ok(())
        }),
        AccountsAction::List { common } => (common, &|records, _| {
            for a in records.accounts()? {
                println!("{}\t{}\t{}\t{}", a.id, a.email, a.plan, a.created_at);
            }
            Ok(())
        }),
    };
    let config = load(common, &common.flags())?;
    let records = Records::open(&config.data)?;
    run(&records, &config)
}
