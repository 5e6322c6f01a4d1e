//! Which API server to talk to, chosen as kubectl chooses: `--kubeconfig` over `KUBECONFIG`
//! (several files, `:`-separated, merged as kubectl merges them: the first file that names an
//! entry wins) over `~/.kube/config`, then the pod's service account (in-cluster). `--context`
//! picks a context of that kubeconfig; without it, its `current-context`.

use std::path::{Path, PathBuf};

use ::kube::config::{InClusterError, KubeConfigOptions, Kubeconfig, KubeconfigError};

/// `--kubeconfig` and `--context`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// Where the client points: for the report's `target` and the first line on stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub api_server: String,
    /// `None` in-cluster.
    pub context: Option<String>,
    /// The context's namespace (`default` where it names none), or the pod's in-cluster.
    pub namespace: String,
}

/// Why no client configuration could be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ClientConfigError {
    #[error("cannot read kubeconfig {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: KubeconfigError,
    },
    #[error("cannot read the kubeconfig files KUBECONFIG names")]
    Environment(#[source] KubeconfigError),
    #[error("cannot use {} of the kubeconfig", describe_context(.context.as_deref()))]
    Context {
        context: Option<String>,
        #[source]
        source: KubeconfigError,
    },
    #[error(
        "--context {0} needs a kubeconfig, and there is none (--kubeconfig, KUBECONFIG, \
         ~/.kube/config)"
    )]
    ContextWithoutKubeconfig(String),
    #[error(
        "no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) and no in-cluster service \
         account"
    )]
    InCluster(#[source] InClusterError),
}

fn describe_context(context: Option<&str>) -> String {
    match context {
        Some(name) => format!("context {name}"),
        None => "the current context".to_string(),
    }
}

/// The client configuration the selection names, and where it points.
pub async fn load(selection: &Selection) -> Result<(::kube::Config, Endpoint), ClientConfigError> {
    let Some(kubeconfig) = kubeconfig(selection)? else {
        if let Some(context) = &selection.context {
            return Err(ClientConfigError::ContextWithoutKubeconfig(context.clone()));
        }
        let config = ::kube::Config::incluster().map_err(ClientConfigError::InCluster)?;
        let endpoint = Endpoint {
            api_server: config.cluster_url.to_string(),
            context: None,
            namespace: config.default_namespace.clone(),
        };
        return Ok((config, endpoint));
    };
    let context = selection
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone());
    let options = KubeConfigOptions {
        context: selection.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = ::kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| ClientConfigError::Context {
            context: context.clone(),
            source,
        })?;
    let endpoint = Endpoint {
        api_server: config.cluster_url.to_string(),
        context,
        namespace: config.default_namespace.clone(),
    };
    Ok((config, endpoint))
}

/// The kubeconfig kubectl would read, if any.
fn kubeconfig(selection: &Selection) -> Result<Option<Kubeconfig>, ClientConfigError> {
    if let Some(path) = &selection.kubeconfig {
        return read(path).map(Some);
    }
    if let Some(merged) = Kubeconfig::from_env().map_err(ClientConfigError::Environment)? {
        return Ok(Some(merged));
    }
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty());
    match home.map(|home| Path::new(&home).join(".kube").join("config")) {
        Some(path) if path.is_file() => read(&path).map(Some),
        _ => Ok(None),
    }
}

fn read(path: &Path) -> Result<Kubeconfig, ClientConfigError> {
    Kubeconfig::read_from(path).map_err(|source| ClientConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}
