//! `completions SHELL`: the shell completion script, generated from the command-line
//! definition itself so it always knows every subcommand and flag.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Error;
use crate::cli::Args;

pub fn execute(shell: Shell) -> Result<ExitCode, Error> {
    crate::report::write_stdout(&script(shell)).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script for `shell`.
fn script(shell: Shell) -> Vec<u8> {
    let mut command = Args::command();
    let name = command.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_shell_the_command_accepts() {
        let command = Args::command();
        let about = command
            .find_subcommand("completions")
            .and_then(|completions| completions.get_about())
            .expect("completions has an about text")
            .to_string();
        for shell in <Shell as clap::ValueEnum>::value_variants() {
            assert!(about.contains(&shell.to_string()), "{shell} in {about:?}");
        }
    }

    #[test]
    fn every_shell_completes_the_subcommands_flags_and_output_formats() {
        for shell in <Shell as clap::ValueEnum>::value_variants().iter().copied() {
            let script = String::from_utf8(script(shell)).expect("a UTF-8 script");
            for word in [
                "vsphere-descheduler",
                "completions",
                "--kubeconfig",
                "--context",
                "html",
            ] {
                assert!(script.contains(word), "{shell}: no {word}");
            }
        }
    }
}
