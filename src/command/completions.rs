//! `completions SHELL`: the shell completion script, generated from the command-line
//! definition itself so it always knows every subcommand and flag.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Error;
use crate::cli::Args;

pub fn execute(shell: Shell) -> Result<ExitCode, Error> {
    let mut command = Args::command();
    let name = command.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    crate::report::write_stdout(&script).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}
