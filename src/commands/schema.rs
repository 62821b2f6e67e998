//! `premerge schema <artefact>`: print the JSON Schema of an artefact
//! (classified, fix-waves, blocked-on, events) or of the findings input (findings).

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::waves::schema::{ARTEFACTS, schema};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The artefact: classified, fix-waves, blocked-on, events, or findings (the input).
    #[arg(value_name = "ARTEFACT", value_parser = clap::builder::PossibleValuesParser::new(ARTEFACTS))]
    pub artefact: String,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let s = schema(&args.artefact).ok_or_else(|| anyhow::anyhow!("unknown artefact `{}`", args.artefact))?;
    write!(ctx.stdout, "{}", crate::canonical::to_pretty(&s)?)?;
    Ok(Exit::Ok)
}
